// `vpn-portal import eduvpn`: brings an eduVPN 3.x server (its database, its key files and each
// node's WireGuard key) into this portal, so that the files it issued keep working; with
// --dry-run only the plan. Prints the plan (counts per kind, conflicts, what is left behind,
// what it leaves because it was removed here after an earlier import or eduVPN refuses it, the
// schema version found)
// and the progress of a large database: a bar on a terminal, a line every few seconds otherwise.
// Exit code 0 when done or nothing to do, 1 on conflicts.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { ConfigError } from '../config/config-error.js';
import { readSecretFile } from '../config/secret-files.js';
import { PortalEvents } from '../core/events.js';
import {
  ImportConflictWhileWriting,
  importEduVpn,
  planEduVpnImport,
  type ImportContext,
  type ImportPlan,
  type ImportProgress,
} from '../core/importing/index.js';
import { EDUVPN_RECORD_KINDS, type EduVpnLocation, type EduVpnRecordKind } from '../eduvpn/deployment.js';
import { readEduVpnDeployment } from '../eduvpn/read-deployment.js';
import { EduVpnReadError } from '../eduvpn/read-error.js';
import { KeyStore } from '../keys/key-store.js';
import { writeAuditLog } from '../listeners/audit-log.js';
import { OpenVpnKeys } from '../openvpn/openvpn-keys.js';
import { asNodeNumber, type NodeNumber } from '../shared/ids.js';
import { systemClock } from '../shared/time.js';
import { connectDatabase, migrationStatus, openDatabase, type Db } from '../storage/database.js';
import { describeDatabase } from '../config/database-location.js';
import type { PortalConfig } from '../config/portal-config.js';
import { loadExistingPortalConfig } from './existing-portal.js';
import { describeUnknownCommand, parseOptions } from './options.js';
import { formatTable } from './table.js';
import { IMPORT_USAGE } from './usage.js';
import { AtMostEvery } from '../shared/monotonic.js';

/** The eduVPN packages' folders (Debian and Fedora alike). */
const DEFAULT_EDUVPN_CONFIG = '/etc/vpn-user-portal';
const DEFAULT_EDUVPN_DATA = '/var/lib/vpn-user-portal';
/** Without a terminal, a progress line at most this often. */
const PROGRESS_LINE_MS = 5_000;

const KIND_NAMES: Readonly<Record<EduVpnRecordKind, string>> = {
  users: 'users',
  authorizations: 'OAuth authorizations',
  wireGuardPeers: 'WireGuard configurations',
  certificates: 'OpenVPN configurations',
  connectionLog: 'connection log entries',
  dailyStatistics: 'daily statistics',
};

export interface ImportOutput {
  readonly print: (line: string) => void;
  readonly printError: (line: string) => void;
  /** Where progress goes (stderr), and whether it is a terminal. */
  readonly progress: { readonly write: (text: string) => void; readonly isTerminal: boolean };
}

/** Runs an `import` subcommand; returns the exit code. */
export async function runImportCommand(args: readonly string[], output: ImportOutput): Promise<number> {
  const { location, configFile, dryRun } = readImportOptions(args);
  const config = loadExistingPortalConfig(configFile);
  let deployment: Awaited<ReturnType<typeof readEduVpnDeployment>>;
  try {
    deployment = await readEduVpnDeployment(location);
  } catch (error) {
    if (error instanceof EduVpnReadError) throw new ConfigError(`import eduvpn: ${error.message}`);
    throw error;
  }
  const planned = dryRun ? await databaseForDryRun(config) : null;
  const db = planned?.db ?? (await openDatabase(config.database, { timeoutMs: config.databaseTimeoutMs }));
  try {
    const events = new PortalEvents(pino({ name: 'vpn-portal-import', level: 'warn' }, pino.destination(2)));
    writeAuditLog(events);
    const ctx: ImportContext = {
      config,
      db,
      keys: new KeyStore(config.keyDir),
      openVpnKeys: new OpenVpnKeys(config.keyDir),
      events,
      clock: systemClock,
    };
    const progress = progressReporter(output.progress);
    if (dryRun) {
      let plan: Awaited<ReturnType<typeof planEduVpnImport>>;
      try {
        plan = await planEduVpnImport(ctx, deployment, progress.report);
      } catch (error) {
        progress.end();
        // A row eduVPN's database has that cannot be read as it is: one line naming it.
        if (!(error instanceof EduVpnReadError)) throw error;
        output.printError(`dry run stopped: ${error.message}`);
        return 1;
      }
      progress.end();
      printPlan(plan, output.print);
      return plan.conflictCount > 0 ? 1 : 0;
    }
    let outcome: Awaited<ReturnType<typeof importEduVpn>>;
    try {
      outcome = await importEduVpn(ctx, deployment, progress.report);
    } catch (error) {
      progress.end();
      // The kinds before it are in; a new run goes on from there. A row that cannot be read
      // (found while planning, before anything is written, or while writing) is named in one line.
      if (!(error instanceof ImportConflictWhileWriting || error instanceof EduVpnReadError)) throw error;
      output.printError(`import stopped: ${error.message}`);
      return 1;
    }
    progress.end();
    printPlan(outcome.plan, output.print);
    if (outcome.applied === null) {
      output.printError(`import refused: ${outcome.plan.conflictCount} conflicts (listed above); nothing was written`);
      return 1;
    }
    const written = Object.values(outcome.applied.inserted).reduce((sum, count) => sum + count, 0);
    if (written + outcome.applied.keyFiles === 0)
      output.print(
        outcome.plan.removedHereCount === 0
          ? 'nothing to do: everything is here already'
          : `nothing to do: everything is here already or was removed here (${outcome.plan.removedHereCount} left, listed above)`,
      );
    else
      output.print(
        `imported: ${outcome.applied.keyFiles} key files, ${EDUVPN_RECORD_KINDS.map((kind) => `${outcome.applied?.inserted[kind] ?? 0} ${KIND_NAMES[kind]}`).join(', ')}`,
      );
    return 0;
  } finally {
    await deployment.close();
    await db.destroy();
    await planned?.removeScratch();
  }
}

/**
 * The database a dry run plans against, changing nothing: the portal's own when its schema is
 * this version's; when the portal has no database yet (no file, or no table in it), an empty one
 * made for the run in a temporary folder and removed after, which is what the import would start
 * from. A schema of an older version is refused: the import (or the portal) would update it first.
 */
async function databaseForDryRun(
  config: PortalConfig,
): Promise<{ readonly db: Db; readonly removeScratch: () => Promise<void> }> {
  const location = config.database;
  const options = { timeoutMs: config.databaseTimeoutMs };
  const missing = location.dialect === 'sqlite' && !existsSync(location.path);
  if (!missing) {
    const db = connectDatabase(location, options);
    const migrations = await migrationStatus(db).catch(async (error: unknown) => {
      await db.destroy();
      throw error;
    });
    const pending = migrations.filter((migration) => migration.appliedAt === null).length;
    if (pending === 0) return { db, removeScratch: async () => {} };
    await db.destroy();
    if (pending < migrations.length)
      throw new ConfigError(
        `import eduvpn --dry-run: the database ${describeDatabase(location)} has ${pending} of this version's schema changes still to apply; the dry run changes nothing: start the portal once (or import without --dry-run), then plan again`,
      );
  }
  const scratch = await mkdtemp(path.join(tmpdir(), 'vpn-portal-dry-run-'));
  const removeScratch = () => rm(scratch, { recursive: true, force: true });
  try {
    return {
      db: await openDatabase({ dialect: 'sqlite', path: path.join(scratch, 'empty.sqlite') }, options),
      removeScratch,
    };
  } catch (error) {
    await removeScratch();
    throw error;
  }
}

/** `import eduvpn`'s command line: where the deployment is, this portal's configuration file, and whether only to plan. */
function readImportOptions(args: readonly string[]): {
  readonly location: EduVpnLocation;
  readonly configFile: string | undefined;
  readonly dryRun: boolean;
} {
  const [subcommand, ...rest] = args;
  if (subcommand !== 'eduvpn')
    throw new ConfigError(
      `${describeUnknownCommand('import', subcommand ?? '', ['eduvpn', 'eduvpn-config'])}\n${IMPORT_USAGE}`,
    );
  const { values } = parseOptions({
    args: [...rest],
    options: {
      config: { type: 'string' },
      'eduvpn-config': { type: 'string' },
      'eduvpn-data': { type: 'string' },
      'eduvpn-database': { type: 'string' },
      'eduvpn-database-password-file': { type: 'string' },
      'node-wireguard-key': { type: 'string', multiple: true },
      'dry-run': { type: 'boolean' },
    },
    strict: true,
    allowPositionals: false,
  });
  const dataDir = path.resolve(values['eduvpn-data'] ?? DEFAULT_EDUVPN_DATA);
  return {
    location: {
      configDir: path.resolve(values['eduvpn-config'] ?? DEFAULT_EDUVPN_CONFIG),
      dataDir,
      database: withPasswordFrom(
        values['eduvpn-database'] ?? `sqlite:${path.join(dataDir, 'db.sqlite')}`,
        values['eduvpn-database-password-file'],
      ),
      nodeWireGuardKeyFiles: parseNodeKeyFiles(values['node-wireguard-key'] ?? []),
    },
    configFile: values.config,
    dryRun: values['dry-run'] === true,
  };
}

/**
 * The eduVPN database's URL with the password of `passwordFile` in it: a password in the URL
 * itself is on the command line, where every local user reads it with ps.
 */
function withPasswordFrom(database: string, passwordFile: string | undefined): string {
  if (passwordFile === undefined) return database;
  const option = '--eduvpn-database-password-file';
  if (!/^(postgres|postgresql|mysql|mariadb):\/\//.test(database))
    throw new ConfigError(`${option} goes with a postgres:// or mysql:// --eduvpn-database\n${IMPORT_USAGE}`);
  const url = new URL(database);
  if (url.password !== '')
    throw new ConfigError(`${option}: the --eduvpn-database URL has a password already; leave it out of the URL`);
  if (url.username === '') throw new ConfigError(`${option}: the --eduvpn-database URL names no user`);
  const problems: string[] = [];
  const password = readSecretFile(passwordFile, passwordFile, option, (_, message) => problems.push(message));
  if (problems.length > 0) throw new ConfigError(`${option}: ${problems.join('; ')}`);
  url.password = encodeURIComponent(password.reveal());
  return url.href;
}

/** `N=FILE`, each node once. */
function parseNodeKeyFiles(values: readonly string[]): Map<NodeNumber, string> {
  const files = new Map<NodeNumber, string>();
  for (const value of values) {
    const match = /^(0|[1-9]\d*)=(.+)$/.exec(value);
    if (match === null || match[1] === undefined || match[2] === undefined)
      throw new ConfigError(
        `--node-wireguard-key needs N=FILE (a node number, then the node's wireguard.key), not "${value}"\n${IMPORT_USAGE}`,
      );
    const node = asNodeNumber(Number(match[1]));
    if (files.has(node)) throw new ConfigError(`--node-wireguard-key names node ${node} twice`);
    files.set(node, path.resolve(match[2]));
  }
  return files;
}

function printPlan(plan: ImportPlan, print: (line: string) => void): void {
  print(`eduVPN deployment: ${plan.source}, schema version ${plan.schemaVersion}`);
  print(
    formatTable(
      ['records', 'to bring', 'already here', 'conflicting', 'expired (left)'],
      EDUVPN_RECORD_KINDS.map((kind) => {
        const counts = plan.counts[kind];
        return [
          KIND_NAMES[kind],
          String(counts.toBring),
          String(counts.alreadyHere),
          String(counts.conflicting),
          String(counts.expired),
        ];
      }),
    ),
  );
  if (plan.keyFiles.length > 0)
    print(
      formatTable(
        ['key file', 'path', 'state'],
        plan.keyFiles.map((file) => [
          file.name,
          file.path,
          file.state === 'missing' ? 'to bring' : file.state === 'same' ? 'already here' : 'conflicting',
        ]),
      ),
    );
  for (const key of plan.keyWarnings) print(`warning: ${key.name}: ${key.reason}`);
  for (const key of plan.keysNotNeeded) print(`not needed: ${key.name}: ${key.reason}`);
  const left = plan.leftBehind;
  print(
    `left behind: ${left.localUsers} local passwords, ${left.refreshTokens} app refresh tokens, ${left.liveStatistics} live statistics rows, ${left.guestUserCounts} daily guest user counts`,
  );
  printRemovedHere(plan, print);
  if (plan.conflictCount === 0) return;
  print(`${plan.conflictCount} conflicts:`);
  for (const conflict of plan.conflicts)
    print(`  ${KIND_NAMES[conflict.kind as EduVpnRecordKind] ?? 'key files'} ${conflict.record}: ${conflict.reason}`);
  if (plan.conflictCount > plan.conflicts.length)
    print(`  … and ${plan.conflictCount - plan.conflicts.length} more (fix these and run the dry run again)`);
}

/**
 * What was revoked here (after an earlier import brought it, or a user destroyed here), or what
 * eduVPN refuses (an OpenVPN certificate, for its profile's ACL): left, each named, since a
 * revocation is final.
 */
function printRemovedHere(plan: ImportPlan, print: (line: string) => void): void {
  if (plan.removedHereCount === 0) return;
  const perKind = EDUVPN_RECORD_KINDS.filter((kind) => plan.counts[kind].removedHere > 0).map(
    (kind) => `${plan.counts[kind].removedHere} ${KIND_NAMES[kind]}`,
  );
  print(`left because revoked here or refused by eduVPN (a revocation is final): ${perKind.join(', ')}`);
  for (const removed of plan.removedHere) print(`  ${KIND_NAMES[removed.kind]} ${removed.record}: ${removed.reason}`);
  if (plan.removedHereCount > plan.removedHere.length)
    print(`  … and ${plan.removedHereCount - plan.removedHere.length} more`);
}

/** A bar redrawn in place on a terminal; elsewhere a line every few seconds and at each kind's end. */
function progressReporter(target: ImportOutput['progress']): { report: ImportProgress; end: () => void } {
  // On the monotonic clock: the wall clock set back must not silence the progress lines.
  const lines = new AtMostEvery(PROGRESS_LINE_MS);
  let drawn = false;
  const report: ImportProgress = ({ phase, kind, done, total }) => {
    const text = `${phase} ${KIND_NAMES[kind]}: ${done} of ${total}`;
    if (target.isTerminal) {
      const width = 30;
      const filled = total === 0 ? width : Math.min(width, Math.round((done / total) * width));
      target.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${text}\u001b[K`);
      drawn = true;
      return;
    }
    if (lines.allow() || done >= total) {
      target.write(`${text}\n`);
    }
  };
  return { report, end: () => (drawn ? target.write('\n') : undefined) };
}
