#!/usr/bin/env -S node --max-old-space-size=192
// The heap is capped (run `node --max-old-space-size=N dist/cli/main.js` for another cap): large
// listings make short-lived strings, and an uncapped heap on a big machine lets them pile up as RSS.
// `vpn-portal`: serve the portal, create its secrets and admin keys, read the audit log, or run a node agent.
import { parseArgs } from 'node:util';
import { ConfigError, loadPortalConfig } from '../config/load.js';
import { startPortal } from '../portal.js';
import { UnsafePermissions } from '../storage/private-files.js';
import { ADMIN_KEY_USAGE, runAdminKeyCommand } from './admin-key.js';
import { AUDIT_USAGE, runAuditCommand } from './audit.js';
import { DB_USAGE, runDbCommand } from './db.js';
import { generateSecrets } from './generate-secrets.js';
import { runNode } from './node.js';
import { runNodeReset } from './node-reset.js';

const USAGE = `usage:
  vpn-portal serve [--config FILE]                         serve the portal (embedded default configuration without --config)
  vpn-portal generate-secrets [--admin-api] [--node N] [--config FILE]
                                                           create missing keys (never overwrites)
  vpn-portal node --config FILE                            run a VPN node agent
  vpn-portal node-reset N [--config FILE]                  let the portal empty node N although this
                                                           database never held a configuration for it
${DB_USAGE}
${ADMIN_KEY_USAGE}
${AUDIT_USAGE}`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h') {
    console.log(USAGE);
    return 0;
  }
  // `db` and `admin-key` have subcommands and options of their own, `audit` options of its own.
  const print = (line: string): void => console.log(line);
  const printError = (line: string): void => console.error(line);
  if (command === 'db') return runDbCommand(rest, print, printError);
  if (command === 'admin-key') return runAdminKeyCommand(rest, print, printError);
  if (command === 'audit') return runAuditCommand(rest, print, printError);
  const { values, positionals } = parseArgs({
    args: rest,
    options: { config: { type: 'string' }, 'admin-api': { type: 'boolean' }, node: { type: 'string' }, help: { type: 'boolean' } },
    strict: true,
    // Only node-reset takes one (its node number).
    allowPositionals: command === 'node-reset',
  });
  if (values.help === true || command === undefined || command === 'help' || command === '--help') {
    console.log(USAGE);
    return command === undefined ? 2 : 0;
  }
  switch (command) {
    case 'serve': {
      const portal = await startPortal(loadPortalConfig(values.config));
      await waitForSignal();
      await portal.close();
      return 0;
    }
    case 'generate-secrets': {
      const node = values.node === undefined ? undefined : parseNodeNumber(values.node);
      await generateSecrets(loadPortalConfig(values.config), { adminApi: values['admin-api'] === true, node }, (line) => console.log(line));
      return 0;
    }
    case 'node-reset': {
      const [nodeText] = positionals;
      if (nodeText === undefined || positionals.length !== 1) throw new ConfigError(`node-reset needs one node number\n${USAGE}`);
      await runNodeReset(parseNodeNumber(nodeText), values.config, (line) => console.log(line));
      return 0;
    }
    case 'node': {
      if (values.config === undefined) throw new ConfigError('vpn-portal node needs --config FILE');
      await runNode({ configPath: values.config });
      return 0;
    }
    default:
      console.error(`unknown command "${command}"\n${USAGE}`);
      return 2;
  }
}

function parseNodeNumber(text: string): number {
  if (!/^(0|[1-9]\d*)$/.test(text)) throw new ConfigError(`--node needs a node number (0, 1, ...), not "${text}"`);
  return Number(text);
}

function waitForSignal(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    // Configuration and usage errors are the operator's to fix: show the message, not a stack.
    if (error instanceof ConfigError || (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))) {
      console.error(error.message);
      process.exit(2);
    }
    // A folder open to other users that the portal cannot tighten: one line saying what to do.
    if (error instanceof UnsafePermissions) {
      console.error(error.message);
      process.exit(1);
    }
    console.error(error);
    process.exit(1);
  },
);
