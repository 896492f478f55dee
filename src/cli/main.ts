#!/usr/bin/env -S node --max-old-space-size=192
// The heap is capped (run `node --max-old-space-size=N dist/cli/main.js` for another cap): large
// listings make short-lived strings, and an uncapped heap on a big machine lets them pile up as RSS.
// `vpn-portal`: serve the portal, create its secrets and admin keys, run a node agent, or call the Admin API.
// Each command's module is loaded only when it runs, so `node` and `admin` never load the
// database drivers (a node host installs without them).
import type { ParseArgsConfig } from 'node:util';
import { ConfigError } from '../config/config-error.js';
import { readAgentVersion } from '../agent/version.js';
import { describeUnknownCommand, isParseArgsError, OptionError, parseOptions } from './options.js';
import { describeStartFailure } from './start-failure.js';
import {
  ADMIN_KEY_USAGE,
  ADMIN_USAGE,
  DB_USAGE,
  IMPORT_USAGE,
  MDM_USAGE,
  NODE_RESET_USAGE,
  NODE_USAGE,
  SECRETS_USAGE,
  SERVE_USAGE,
  USAGE,
} from './usage.js';

const COMMAND_USAGE: Readonly<Record<string, string>> = {
  serve: SERVE_USAGE,
  'generate-secrets': SECRETS_USAGE,
  node: NODE_USAGE,
  'node-reset': NODE_RESET_USAGE,
  db: DB_USAGE,
  'admin-key': ADMIN_KEY_USAGE,
  mdm: MDM_USAGE,
  import: IMPORT_USAGE,
  admin: ADMIN_USAGE,
};

/** A mistake on the command line: the message, then the usage of the command. */
class UsageError extends Error {
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
  }
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === '--version' || command === '-v') {
    console.log(`vpn-portal ${await readAgentVersion()}`);
    return 0;
  }
  if (command === undefined) {
    console.error(USAGE);
    return 2;
  }
  if (command === '--help' || command === '-h' || command === 'help') {
    console.log(USAGE);
    return 0;
  }
  const usage = COMMAND_USAGE[command];
  if (usage === undefined)
    throw new UsageError(describeUnknownCommand('', command, [...Object.keys(COMMAND_USAGE), 'help']), USAGE);
  // `admin` has commands and options of its own, and its own exit codes.
  if (command === 'admin') return runAdmin(rest);
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(usage);
    return 0;
  }
  // `db`, `admin-key` and `mdm` have subcommands and options of their own.
  if (command === 'db' || command === 'admin-key' || command === 'mdm') return runWithSubcommands(command, rest, usage);
  if (command === 'import') return runImport(rest, usage);
  return runWithOptions(command, rest, usage);
}

/** `vpn-portal admin`: calls the Admin API, with its own options and exit codes. */
async function runAdmin(args: string[]): Promise<number> {
  const { runAdminCommand } = await import('./admin.js');
  return runAdminCommand(args, process.env, {
    print: (text) => console.log(text),
    printError: (text) => console.error(text),
  });
}

/** `db`, `admin-key` and `mdm`: their own subcommands parse their own options; a mistake there shows the usage. */
async function runWithSubcommands(command: 'db' | 'admin-key' | 'mdm', args: string[], usage: string): Promise<number> {
  const run =
    command === 'db'
      ? (await import('./db.js')).runDbCommand
      : command === 'mdm'
        ? (await import('./mdm.js')).runMdmCommand
        : (await import('./admin-key.js')).runAdminKeyCommand;
  try {
    return await run(
      args,
      (line) => console.log(line),
      (line) => console.error(line),
    );
  } catch (error) {
    if (error instanceof OptionError || isParseArgsError(error)) throw new UsageError((error as Error).message, usage);
    throw error;
  }
}

/**
 * `import eduvpn` (the data, with progress on stderr, as a bar on a terminal) and `import
 * eduvpn-config` (the configuration files): each parses its own options.
 */
async function runImport(args: string[], usage: string): Promise<number> {
  try {
    if (args[0] === 'eduvpn-config') {
      const { runImportEduVpnConfig } = await import('./import-eduvpn-config.js');
      return await runImportEduVpnConfig(
        args.slice(1),
        (line) => console.log(line),
        (line) => console.error(line),
      );
    }
    const { runImportCommand } = await import('./import.js');
    return await runImportCommand(args, {
      print: (line) => console.log(line),
      printError: (line) => console.error(line),
      progress: { write: (text) => process.stderr.write(text), isTerminal: process.stderr.isTTY === true },
    });
  } catch (error) {
    if (error instanceof OptionError || isParseArgsError(error)) throw new UsageError((error as Error).message, usage);
    throw error;
  }
}

/** `serve`, `generate-secrets`, `node-reset` and `node`: the commands that share `--config`. */
async function runWithOptions(command: string, args: string[], usage: string): Promise<number> {
  const { values, positionals } = parseCommandArgs(command, args, usage);
  switch (command) {
    case 'serve':
      return serveUntilSignal(values.config);
    case 'generate-secrets': {
      const [{ loadPortalConfig }, { generateSecrets }] = await Promise.all([
        import('../config/load.js'),
        import('./generate-secrets.js'),
      ]);
      const node = values.node === undefined ? undefined : parseNodeNumber(values.node, '--node');
      await generateSecrets(loadPortalConfig(values.config), { adminApi: values['admin-api'] === true, node }, (line) =>
        console.log(line),
      );
      return 0;
    }
    case 'node-reset': {
      const [nodeText] = positionals;
      if (nodeText === undefined || positionals.length !== 1)
        throw new UsageError('node-reset needs one node number', usage);
      const { runNodeReset } = await import('./node-reset.js');
      await runNodeReset(parseNodeNumber(nodeText, 'node-reset'), values.config, (line) => console.log(line));
      return 0;
    }
    default: {
      if (values.config === undefined) throw new UsageError('vpn-portal node needs --config FILE', usage);
      const { runNode } = await import('./node.js');
      await runNode({ configPath: values.config });
      return 0;
    }
  }
}

/** `vpn-portal serve`: starts the portal, and stops it on SIGINT or SIGTERM. */
async function serveUntilSignal(configPath: string | undefined): Promise<number> {
  const [{ loadPortalConfig }, { startPortal }] = await Promise.all([
    import('../config/load.js'),
    import('../portal.js'),
  ]);
  const portal = await startPortal(loadPortalConfig(configPath));
  const signal = await waitForSignal();
  portal.ctx.logger.info({ signal }, 'stopping the portal');
  await portal.close();
  portal.ctx.logger.info('portal stopped');
  return 0;
}

function parseCommandArgs(command: string, args: readonly string[], usage: string) {
  const options: ParseArgsConfig['options'] = {
    config: { type: 'string' },
    ...(command === 'generate-secrets' ? { 'admin-api': { type: 'boolean' }, node: { type: 'string' } } : {}),
  };
  try {
    const parsed = parseOptions({ args: [...args], options, strict: true, allowPositionals: command === 'node-reset' });
    const values = parsed.values as { config?: string; 'admin-api'?: boolean; node?: string };
    return { values, positionals: parsed.positionals };
  } catch (error) {
    if (error instanceof OptionError) throw new UsageError(error.message, usage);
    throw error;
  }
}

/** `what`: the option or command that takes it, as the error names it. */
function parseNodeNumber(text: string, what: '--node' | 'node-reset'): number {
  if (!/^(0|[1-9]\d*)$/.test(text)) throw new ConfigError(`${what} needs a node number (0, 1, ...), not "${text}"`);
  return Number(text);
}

function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n${error.usage}`);
      process.exit(2);
    }
    // Configuration and usage errors are the operator's to fix: show the message, not a stack.
    if (error instanceof ConfigError || isParseArgsError(error)) {
      console.error((error as Error).message);
      process.exit(2);
    }
    // A folder open to other users, a database that cannot be reached, a port in use: one line.
    const line = describeStartFailure(error);
    if (line !== null) {
      console.error(line);
      process.exit(1);
    }
    console.error(error);
    process.exit(1);
  },
);
