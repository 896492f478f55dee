// `vpn-portal admin …`: the Admin API from the command line, built on the typed client. Tables
// for people, `--json` for scripts, and exit codes a script can rely on: 0 done, 1 the portal
// answered with an error, 2 a usage or configuration mistake, 3 the portal could not be reached.
// The commands themselves are in src/cli/admin/, one module per group; this reads the command
// line, checks it against the command's arguments and flags, and runs it.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { AdminApiClient, AdminApiError } from '../admin-client/admin-api-client.js';
import { ConfigError } from '../config/config-error.js';
import { fetchFailureReason } from '../shared/error-message.js';
import { ATTRIBUTION_COMMANDS, LEGAL_HOLD_COMMANDS } from './admin/accountability.js';
import { ADMIN_KEY_COMMANDS } from './admin/admin-keys.js';
import { type AdminCommand, type AdminFlags, type Output, UsageError } from './admin/command.js';
import { CONFIGURATION_COMMANDS, CONNECTION_DELETE_COMMANDS } from './admin/configurations.js';
import { DEVICE_COMMANDS } from './admin/devices.js';
import { ENROLLMENT_TOKEN_COMMANDS } from './admin/enrollment-tokens.js';
import { LOG_COMMANDS } from './admin/logs.js';
import { REVOCATION_COMMANDS, RevocationNotApplied } from './admin/revocations.js';
import { USER_CHANGE_COMMANDS, USER_LIST_COMMANDS } from './admin/users.js';
import { TestNotDelivered, WEBHOOK_COMMANDS, WEBHOOK_DELIVERY_COMMANDS } from './admin/webhooks.js';
import { resolveAdminTarget } from './admin-target.js';
import { describeUnknownCommand, describeUnknownOption, isParseArgsError, unknownOption } from './options.js';
import { ADMIN_USAGE } from './usage.js';

/** `notApplied`: with `--wait`, the revocation receipt ended overdue (or superseded) rather than applied. */
export const ADMIN_EXIT = { ok: 0, refused: 1, usage: 2, unreachable: 3, notApplied: 3 } as const;

/** `webhook create` is listed before the admin-key commands, the rest of `webhook …` after them. */
const { 'webhook create': webhookCreate, ...otherWebhookCommands } = WEBHOOK_COMMANDS;

/**
 * Every `vpn-portal admin` command: the eleven calls of the specification, then this portal's
 * extensions (connection history, statistics, audit log, renewal, `webhook …`), one entry each.
 * Their order is the order the short usage lists them in (`webhook create` first of its group).
 */
const COMMANDS: Readonly<Record<string, AdminCommand>> = {
  ...USER_LIST_COMMANDS,
  ...CONFIGURATION_COMMANDS,
  ...ENROLLMENT_TOKEN_COMMANDS,
  ...USER_CHANGE_COMMANDS,
  ...CONNECTION_DELETE_COMMANDS,
  ...REVOCATION_COMMANDS,
  ...LOG_COMMANDS,
  ...ATTRIBUTION_COMMANDS,
  'webhook create': webhookCreate,
  ...ADMIN_KEY_COMMANDS,
  ...otherWebhookCommands,
  ...DEVICE_COMMANDS,
  ...WEBHOOK_DELIVERY_COMMANDS,
  ...LEGAL_HOLD_COMMANDS,
};

/** Every flag a command may take: its long option name (for suggestions) and its usage. */
const FLAGS: Readonly<Record<keyof AdminFlags, { readonly option: string; readonly usage: string }>> = {
  all: { option: 'all', usage: '--all' },
  format: { option: 'format', usage: '--format wireguard|wireguard-tcp|openvpn|apple' },
  displayName: { option: 'display-name', usage: '--display-name NAME' },
  expiresIn: { option: 'expires-in', usage: '--expires-in DURATION' },
  preferTcp: { option: 'prefer-tcp', usage: '--prefer-tcp' },
  output: { option: 'output', usage: '-o FILE' },
  force: { option: 'force', usage: '--force' },
  qr: { option: 'qr', usage: '--qr' },
  user: { option: 'user', usage: '--user USER' },
  profile: { option: 'profile', usage: '--profile ID' },
  since: { option: 'since', usage: '--since TIME' },
  at: { option: 'at', usage: '--at TIME' },
  until: { option: 'until', usage: '--until TIME' },
  limit: { option: 'limit', usage: '--limit N' },
  cursor: { option: 'cursor', usage: '--cursor CURSOR' },
  open: { option: 'open', usage: '--open' },
  closed: { option: 'closed', usage: '--closed' },
  keyName: { option: 'key-name', usage: '--key-name NAME' },
  scope: { option: 'scope', usage: '--scope read|write|admin' },
  allow: { option: 'allow', usage: '--allow PREFIX,…' },
  publicKey: { option: 'public-key', usage: '--public-key KEY' },
  csr: { option: 'csr', usage: '--csr FILE' },
  description: { option: 'description', usage: '--description TEXT' },
  overlap: { option: 'overlap', usage: '--overlap DURATION' },
  webhook: { option: 'webhook', usage: '--webhook ID' },
  eventType: { option: 'event-type', usage: '--event-type TYPE' },
  state: { option: 'state', usage: '--state STATE' },
  uses: { option: 'uses', usage: '--uses N' },
  validFor: { option: 'valid-for', usage: '--valid-for DURATION' },
  wait: { option: 'wait', usage: '--wait' },
  platform: { option: 'platform', usage: '--platform PLATFORM' },
  onDemand: { option: 'on-demand', usage: '--on-demand yes|no' },
  deviceId: { option: 'device-id', usage: '--device-id ID' },
  serial: { option: 'serial', usage: '--serial SERIAL' },
  mdmId: { option: 'mdm-id', usage: '--mdm-id ID' },
  port: { option: 'port', usage: '--port PORT' },
  reason: { option: 'reason', usage: '--reason TEXT' },
};

/** The options every admin command takes. */
const COMMON_OPTIONS = ['url', 'key-file', 'config', 'json', 'help'] as const;

/** One command's usage (a handful of lines), for its --help and its mistakes. */
export function adminCommandUsage(name: string): string {
  const command = COMMANDS[name];
  if (command === undefined) return ADMIN_USAGE;
  const words = [
    ...command.args,
    ...command.flags.map((flag) => `[${FLAGS[flag].usage}]`),
    '[--url URL] [--key-file FILE] [--config FILE] [--json]',
  ];
  return [
    ...wrap(`usage: vpn-portal admin ${name}`, words, '         '),
    ...wrap(' ', command.summary.split(' '), '  '),
  ].join('\n');
}

/** After a mistyped command: the commands by name only, and where their usage is (the whole one is long). */
function shortAdminUsage(): string {
  return [
    'usage: vpn-portal admin COMMAND [ARGUMENTS] [--url URL] [--key-file FILE] [--config FILE] [--json]',
    ...wrap(
      '  commands:',
      Object.keys(COMMANDS).map((name, index, all) => (index < all.length - 1 ? `${name},` : name)),
      '    ',
    ),
    "  one command's usage: vpn-portal admin COMMAND --help; every command's: vpn-portal admin --help",
  ].join('\n');
}

/** Words joined into lines of at most 100 characters, the first after `head`, the others after `indent`. */
function wrap(head: string, words: readonly string[], indent: string): string[] {
  const lines: string[] = [];
  let line = head;
  for (const word of words) {
    if (line.length + 1 + word.length > 100 && line.trim() !== '') {
      lines.push(line);
      line = indent + word;
    } else line = `${line} ${word}`;
  }
  return [...lines, line];
}

const ADMIN_OPTIONS = {
  url: { type: 'string' },
  'key-file': { type: 'string' },
  config: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  all: { type: 'boolean' },
  format: { type: 'string' },
  'display-name': { type: 'string' },
  'expires-in': { type: 'string' },
  'prefer-tcp': { type: 'boolean' },
  output: { type: 'string', short: 'o' },
  force: { type: 'boolean' },
  qr: { type: 'boolean' },
  user: { type: 'string' },
  profile: { type: 'string' },
  since: { type: 'string' },
  at: { type: 'string' },
  until: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  open: { type: 'boolean' },
  closed: { type: 'boolean' },
  'key-name': { type: 'string' },
  scope: { type: 'string' },
  allow: { type: 'string' },
  'public-key': { type: 'string' },
  csr: { type: 'string' },
  description: { type: 'string' },
  overlap: { type: 'string' },
  webhook: { type: 'string' },
  'event-type': { type: 'string' },
  state: { type: 'string' },
  uses: { type: 'string' },
  'valid-for': { type: 'string' },
  wait: { type: 'boolean' },
  platform: { type: 'string' },
  'on-demand': { type: 'string' },
  'device-id': { type: 'string' },
  serial: { type: 'string' },
  'mdm-id': { type: 'string' },
  port: { type: 'string' },
  reason: { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

/** `webhook SUBCOMMAND …` (and `device …`, `admin-key …`) is one command of two words; the others are one. */
function commandOf(positionals: readonly string[]): [string | undefined, string[]] {
  const [first, ...rest] = positionals;
  return (first === 'webhook' || first === 'device' || first === 'admin-key' || first === 'legal-hold') &&
    rest[0] !== undefined
    ? [`${first} ${rest[0]}`, rest.slice(1)]
    : [first, rest];
}

/** The command line read strictly; an unknown option is named with the nearest option of that command. */
function parseAdminArgs(argv: readonly string[]) {
  const config = { args: [...argv], allowPositionals: true, strict: true, options: ADMIN_OPTIONS } as const;
  try {
    return parseArgs(config);
  } catch (error) {
    if (!isParseArgsError(error)) throw error;
    const [name] = commandOf(parseArgs({ ...config, strict: false }).positionals);
    const typed = unknownOption(config);
    if (typed === null) throw new UsageError((error as Error).message, name);
    const command = name === undefined ? undefined : COMMANDS[name];
    const candidates =
      command === undefined
        ? Object.keys(ADMIN_OPTIONS)
        : [...command.flags.map((flag) => FLAGS[flag].option), ...COMMON_OPTIONS];
    throw new UsageError(describeUnknownOption(typed, candidates), name);
  }
}

/** Runs `vpn-portal admin ARGS`; returns the exit code. */
export async function runAdminCommand(argv: readonly string[], env: NodeJS.ProcessEnv, out: Output): Promise<number> {
  let json = argv.includes('--json');
  try {
    const { values, positionals } = parseAdminArgs(argv);
    json = values.json === true;
    // `webhook SUBCOMMAND …` is one command of two words.
    const [name, args] = commandOf(positionals);
    if (values.help === true) {
      out.print(name === undefined ? ADMIN_USAGE : adminCommandUsage(name));
      return ADMIN_EXIT.ok;
    }
    if (name === undefined || name === 'help') {
      (name === undefined ? out.printError : out.print)(ADMIN_USAGE);
      return name === undefined ? ADMIN_EXIT.usage : ADMIN_EXIT.ok;
    }
    const command = COMMANDS[name];
    if (command === undefined)
      throw new UsageError(describeUnknownCommand('admin', name, Object.keys(COMMANDS)), undefined, shortAdminUsage());
    if (args.length !== command.args.length) {
      throw new UsageError(
        `admin ${name} takes ${command.args.length === 0 ? 'no arguments' : command.args.join(' ')}`,
        name,
      );
    }
    const flags = adminFlags(values);
    for (const key of Object.keys(FLAGS) as (keyof AdminFlags)[]) {
      const given = flags[key] !== undefined && flags[key] !== false;
      if (given && !command.flags.includes(key))
        throw new UsageError(`admin ${name} does not take ${FLAGS[key].usage.split(' ')[0] ?? ''}`, name);
    }
    const target = await resolveAdminTarget({
      url: values.url,
      keyFile: values['key-file'],
      config: values.config,
      env,
    });
    const client = new AdminApiClient({ baseUrl: target.baseUrl, key: target.key });
    await command.run({ client, args, flags, json, out });
    return ADMIN_EXIT.ok;
  } catch (error) {
    return reportFailure(error, json, out);
  }
}

/** The flags of the command line, by the names the commands use. */
function adminFlags(values: ReturnType<typeof parseAdminArgs>['values']): AdminFlags {
  return {
    all: values.all === true,
    format: values.format,
    displayName: values['display-name'],
    expiresIn: values['expires-in'],
    preferTcp: values['prefer-tcp'] === true,
    output: values.output,
    force: values.force === true,
    qr: values.qr === true,
    user: values.user,
    profile: values.profile,
    since: values.since,
    at: values.at,
    until: values.until,
    limit: values.limit,
    cursor: values.cursor,
    open: values.open === true,
    closed: values.closed === true,
    keyName: values['key-name'],
    scope: values.scope,
    allow: values.allow,
    publicKey: values['public-key'],
    csr: values.csr,
    description: values.description,
    overlap: values.overlap,
    webhook: values.webhook,
    eventType: values['event-type'],
    state: values.state,
    uses: values.uses,
    validFor: values['valid-for'],
    wait: values.wait === true,
    platform: values.platform,
    onDemand: values['on-demand'],
    deviceId: values['device-id'],
    serial: values.serial,
    mdmId: values['mdm-id'],
    port: values.port,
    reason: values.reason,
  };
}

function reportFailure(error: unknown, json: boolean, out: Output): number {
  const say = (code: number, message: string, status?: number): number => {
    out.printError(
      json
        ? JSON.stringify({ error: message, ...(status === undefined ? {} : { status }) })
        : `vpn-portal admin: ${message}`,
    );
    return code;
  };
  if (error instanceof AdminApiError) return say(ADMIN_EXIT.refused, `${error.status} ${error.message}`, error.status);
  if (error instanceof TestNotDelivered) return ADMIN_EXIT.refused;
  if (error instanceof RevocationNotApplied) return ADMIN_EXIT.notApplied;
  if (error instanceof UsageError) {
    const usage = error.usage ?? (error.command === undefined ? ADMIN_USAGE : adminCommandUsage(error.command));
    return say(ADMIN_EXIT.usage, json ? error.message : `${error.message}\n${usage}`);
  }
  if (error instanceof ConfigError) return say(ADMIN_EXIT.usage, error.message);
  // fetch failed: refused, no route, a name that does not resolve, TLS, timeout.
  if (error instanceof Error && (error.name === 'TimeoutError' || error.message === 'fetch failed')) {
    return say(ADMIN_EXIT.unreachable, `cannot reach the portal: ${fetchFailureReason(error)}`);
  }
  throw error;
}
