// `vpn-portal admin-key create|list|revoke|rotate`: the administrator's hand on admin keys.
// They work on the database (every portal instance on it sees a change at once) and the
// pepper in DATA/keys, so they run on a portal host, as the portal's user, also while the
// portal is stopped. A new key is printed once, alone on the last line of output, and never
// again: only its keyed hash is stored. Create, rotate and revoke are in the audit log (key name
// `(command line)`, source `local`, the options given; never the key), written by the audit
// listener in the change's transaction like an Admin API call's row; rotate and revoke drop the
// kept answers of `create_admin_key` that handed out the keys they end, in the same transaction.
import { pino } from 'pino';
import { ConfigError } from '../config/config-error.js';
import { commandLineCall } from '../core/admin-call.js';
import {
  AdminKeyError,
  createAdminKey,
  listAdminKeys,
  revokeAdminKey,
  rotateAdminKey,
  type AdminKeyContext,
  type StoredAdminKey,
} from '../core/access/index.js';
import { PortalEvents } from '../core/events.js';
import { KeyStore } from '../keys/key-store.js';
import { writeAuditLog } from '../listeners/audit-log.js';
import { dropRevokedKeptAnswers } from '../listeners/kept-answers.js';
import { KEY_SCOPES, type KeyScope } from '../protocol/admin-api.js';
import { asProfileId } from '../shared/ids.js';
import { formatAtom, systemClock } from '../shared/time.js';
import { openDatabase, type Db } from '../storage/database.js';
import { ensurePrivateDirectory } from '../storage/private-files.js';
import { loadExistingPortalConfig } from './existing-portal.js';
import { describeUnknownCommand, parseOptions } from './options.js';
import { ADMIN_KEY_USAGE } from './usage.js';

const DEFAULT_GRACE = 'PT1H';
const ADMIN_KEY_COMMANDS = ['create', 'list', 'rotate', 'revoke'];

/** Runs an `admin-key` subcommand; returns the exit code. */
export async function runAdminKeyCommand(
  args: readonly string[],
  print: (line: string) => void,
  printError: (line: string) => void,
): Promise<number> {
  const [subcommand, ...rest] = args;
  // Before the configuration and the database: a mistyped command opens neither.
  if (subcommand === undefined || !ADMIN_KEY_COMMANDS.includes(subcommand))
    throw new ConfigError(
      `${describeUnknownCommand('admin-key', subcommand ?? '', ADMIN_KEY_COMMANDS)}\n${ADMIN_KEY_USAGE}`,
    );
  const parsed = parseAdminKeyArgs(subcommand, rest);
  const config = loadExistingPortalConfig(parsed.values.config);
  ensurePrivateDirectory(config.dataDir);
  const db = await openDatabase(config.database, { timeoutMs: config.databaseTimeoutMs });
  const { ctx, recorded } = adminKeyContext(db, config.keyDir, subcommand);
  const command: AdminKeyCommand = {
    subcommand,
    ...parsed,
    profileIds: config.profiles.map((profile) => profile.profileId),
    ctx,
    recorded,
    print,
  };
  try {
    return await runSubcommand(command);
  } catch (error) {
    if (!(error instanceof AdminKeyError)) throw error;
    printError(`admin-key ${subcommand}: ${error.message}`);
    return 2;
  } finally {
    await db.destroy();
  }
}

/** The options of every `admin-key` subcommand; only `revoke` and `rotate` take a key name. */
function parseAdminKeyArgs(subcommand: string, args: readonly string[]) {
  return parseOptions({
    args: [...args],
    options: {
      config: { type: 'string' },
      name: { type: 'string' },
      scope: { type: 'string' },
      profile: { type: 'string', multiple: true },
      'expires-in': { type: 'string' },
      allow: { type: 'string', multiple: true },
      grace: { type: 'string' },
      json: { type: 'boolean' },
    },
    strict: true,
    allowPositionals: subcommand === 'revoke' || subcommand === 'rotate',
  });
}

/** `ctx` with its changes recorded as this command with these parameters. */
type Recorded = (parameters: Record<string, string | undefined>) => AdminKeyContext;

/** One `admin-key` subcommand, parsed, with the database open. */
interface AdminKeyCommand extends ReturnType<typeof parseAdminKeyArgs> {
  readonly subcommand: string;
  /** The profiles of the configuration, which `create --profile` must name. */
  readonly profileIds: readonly string[];
  readonly ctx: AdminKeyContext;
  readonly recorded: Recorded;
  readonly print: (line: string) => void;
}

/** The context the key functions work in, and how a change is recorded in the audit log. */
function adminKeyContext(db: Db, keyDir: string, subcommand: string): { ctx: AdminKeyContext; recorded: Recorded } {
  // The audit listener, and the kept answers' (a key's secret kept for a retry goes with the key):
  // a key touches no listing, no webhook, no node.
  const events = new PortalEvents(pino({ name: 'vpn-portal-admin-key', level: 'warn' }, pino.destination(2)));
  writeAuditLog(events);
  dropRevokedKeptAnswers(events);
  const ctx: AdminKeyContext = { db, keys: new KeyStore(keyDir), clock: systemClock, events };
  const recorded: Recorded = (parameters) => {
    const given = Object.entries(parameters).filter((entry): entry is [string, string] => entry[1] !== undefined);
    return {
      ...ctx,
      events: events.forCall(commandLineCall(`admin-key ${subcommand}`, Object.fromEntries(given))),
    };
  };
  return { ctx, recorded };
}

function runSubcommand(command: AdminKeyCommand): Promise<number> {
  switch (command.subcommand) {
    case 'create':
      return createKey(command);
    case 'rotate':
      return rotateKey(command);
    case 'revoke':
      return revokeKey(command);
    case 'list':
      return listKeys(command);
    default:
      throw new Error(`admin-key ${command.subcommand}: checked above`);
  }
}

/** The one key name that `revoke` and `rotate` take. */
function oneKeyName({ subcommand, positionals }: AdminKeyCommand): string {
  const [name] = positionals;
  if (name === undefined || positionals.length !== 1)
    throw new ConfigError(`admin-key ${subcommand} needs one key name\n${ADMIN_KEY_USAGE}`);
  return name;
}

async function createKey({ values, profileIds, recorded, print }: AdminKeyCommand): Promise<number> {
  if (values.name === undefined) throw new ConfigError(`admin-key create needs --name NAME\n${ADMIN_KEY_USAGE}`);
  const { key, token } = await createAdminKey(
    recorded({
      name: values.name,
      scope: values.scope ?? 'read',
      profiles: values.profile?.join(','),
      expires_in: values['expires-in'],
      allow_list: values.allow?.join(','),
    }),
    {
      name: values.name,
      scope: scopeOf(values.scope ?? 'read'),
      profiles: values.profile === undefined ? null : values.profile.map(asProfileId),
      expiresIn: values['expires-in'] ?? null,
      allowList: values.allow ?? null,
    },
    profileIds,
  );
  print(`created admin key "${key.name}" (id ${key.keyId}): ${describeRights(key)}`);
  print('this is the only time the key is shown; store it now (the portal keeps only a hash):');
  print(token);
  return 0;
}

async function rotateKey(command: AdminKeyCommand): Promise<number> {
  const { values, recorded, print } = command;
  const expiresIn = values['expires-in'];
  const name = oneKeyName(command);
  const grace = values.grace ?? DEFAULT_GRACE;
  const { key, token, oldKeyEnds } = await rotateAdminKey(
    recorded({ name, grace, expires_in: expiresIn }),
    name,
    grace,
    expiresIn === 'never' ? null : expiresIn,
  );
  print(
    `rotated admin key "${key.name}": the old key works until ${oldKeyEnds}; the new one (id ${key.keyId}): ${describeRights(key)}`,
  );
  print('this is the only time the new key is shown; store it now:');
  print(token);
  return 0;
}

async function revokeKey(command: AdminKeyCommand): Promise<number> {
  const name = oneKeyName(command);
  const count = await revokeAdminKey(command.recorded({ name }), name);
  command.print(`revoked ${count} key(s) named "${name}"; every portal instance refuses them from now on`);
  return 0;
}

async function listKeys({ values, ctx, print }: AdminKeyCommand): Promise<number> {
  const keys = await listAdminKeys(ctx);
  const now = formatAtom(ctx.clock.now());
  if (values.json === true) {
    for (const key of keys) print(JSON.stringify(listing(key, now)));
    return 0;
  }
  if (keys.length === 0) {
    print('no admin keys; make one with "vpn-portal admin-key create --name NAME"');
    return 0;
  }
  const header = [
    'NAME',
    'ID',
    'SCOPE',
    'PROFILES',
    'ALLOW',
    'CREATED',
    'EXPIRES',
    'LAST USED',
    'LAST ADDRESS',
    'STATE',
  ];
  const cells = keys
    .map((key) => listing(key, now))
    .map((row) => [
      row.name,
      row.id,
      row.scope,
      row.profiles?.join(',') ?? 'all',
      row.allow?.join(',') ?? 'any',
      row.created,
      row.expires ?? 'never',
      row.last_used ?? 'never',
      row.last_address ?? '-',
      row.state,
    ]);
  for (const line of table([header, ...cells])) print(line);
  return 0;
}

function scopeOf(text: string): KeyScope {
  const scope = KEY_SCOPES.find((candidate) => candidate === text);
  if (scope === undefined) throw new ConfigError(`--scope: "${text}" is not one of ${KEY_SCOPES.join(', ')}`);
  return scope;
}

function describeRights(key: StoredAdminKey): string {
  return [
    `scope ${key.scope}`,
    key.profiles === null ? 'every profile' : `profiles ${key.profiles.join(', ')}`,
    key.allowList === null ? 'from anywhere in adminApi.allowList' : `only from ${key.allowList.join(', ')}`,
    key.expiresAt === null ? 'never expires' : `expires ${key.expiresAt}`,
  ].join('; ');
}

/** One key as `list` shows it (and `--json` prints it, one object per line). */
function listing(key: StoredAdminKey, now: string) {
  let state: string;
  if (key.revokedAt !== null) state = `revoked ${key.revokedAt}`;
  else if (key.expiresAt !== null && Date.parse(key.expiresAt) <= Date.parse(now))
    state = key.replacedBy === null ? 'expired' : 'rotated out';
  else if (key.replacedBy !== null) state = `rotated, valid until ${key.expiresAt ?? ''}`;
  else state = 'active';
  return {
    name: key.name,
    id: key.keyId,
    scope: key.scope,
    profiles: key.profiles,
    allow: key.allowList,
    created: key.createdAt,
    expires: key.expiresAt,
    last_used: key.lastUsedAt,
    last_address: key.lastUsedAddress,
    state,
  };
}

/** Columns padded to their widest cell. */
function table(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}
