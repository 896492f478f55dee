// The move from eduVPN at scale, as a figure next to its target (100,000 configurations in under
// a minute) rather than a timed test: an eduVPN 3.x SQLite database with 100,000 configurations
// (WireGuard and OpenVPN alike, four per user, a connection log entry each, every 50th user
// disabled) written by the tests' fixture (test/support/eduvpn-deployment.ts), then the real
// command, `vpn-portal import eduvpn`, into a fresh portal on SQLite, and on PostgreSQL when the
// bench has a server (TEST_POSTGRES_URL, as bench/run.sh provides): the dry run, the import (the
// time of each kind of record, as the command reports its progress, and of the whole run) and a
// second run, which must find nothing to do. Then the same from an eduVPN database kept in
// MariaDB (a private server, when mariadb-server is installed) into a portal on SQLite.
// Run by bench/run.sh (BENCH_ONLY=eduvpn runs it alone), or `node --import tsx bench/eduvpn-import.ts`.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { writeEduVpnDeployment, type WrittenEduVpnDeployment } from '../test/support/eduvpn-deployment.js';
import { vpnPortalCommand } from '../test/support/logged-process.js';
import { startPrivateMariadb } from '../test/support/private-mariadb.js';
import { testPortalConfigFile, UNREACHABLE_NODE } from '../test/support/test-portal.js';
import { createPostgresDatabase } from './postgres-database.js';

const TARGET_SECONDS = 60;
const USERS = 25_000;
const CONFIGURATIONS_PER_USER = 4;
const PROFILE = 'employees';
/** Room for 50,000 WireGuard clients on one node. */
const RANGES = {
  wRangeFour: '10.80.0.0/16',
  wRangeSix: 'fd00:80::/64',
  oRangeFour: '10.81.0.0/16',
  oRangeSix: 'fd00:81::/64',
} as const;

const load = (): string =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

/** A line of output and when it arrived, in seconds from the command's start. */
interface TimedLine {
  readonly at: number;
  readonly text: string;
}

/** One run of the command: its exit code, its time, and its output lines (progress goes to stderr). */
interface CommandRun {
  readonly code: number | null;
  readonly seconds: number;
  readonly stdout: readonly TimedLine[];
  readonly stderr: readonly TimedLine[];
  /** The command's CPU seconds (user + system) and peak RSS in MB, when GNU time is there to tell. */
  readonly usage: { readonly cpuSeconds: number; readonly peakMegabytes: number } | null;
}

/** GNU time: the command's own CPU time and peak memory, which a loaded machine changes less than its wall time. */
const GNU_TIME = '/usr/bin/time';

async function runCommand(args: readonly string[], usageFile: string): Promise<CommandRun> {
  const measured = existsSync(GNU_TIME);
  const timed = measured ? [GNU_TIME, '-f', '%U %S %M', '-o', usageFile] : [];
  const run = await runTimed([...timed, ...vpnPortalCommand(), ...args]);
  if (!measured) return { ...run, usage: null };
  const [user = 0, system = 0, kilobytes = 0] = (await readFile(usageFile, 'utf8')).trim().split(' ').map(Number);
  return { ...run, usage: { cpuSeconds: user + system, peakMegabytes: kilobytes / 1024 } };
}

function runTimed(commandLine: readonly string[]): Promise<Omit<CommandRun, 'usage'>> {
  const [command = '', ...commandArgs] = commandLine;
  const started = performance.now();
  const since = (): number => (performance.now() - started) / 1000;
  /** Splits a stream into lines, each stamped when it arrived. */
  const collect = (stream: NodeJS.ReadableStream): { lines: TimedLine[]; flush: () => void } => {
    const lines: TimedLine[] = [];
    let partial = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop() ?? '';
      for (const text of parts) lines.push({ at: since(), text });
    });
    return { lines, flush: () => (partial === '' ? undefined : lines.push({ at: since(), text: partial })) };
  };
  return new Promise((resolve, reject) => {
    const child = spawn(command, commandArgs, { stdio: ['ignore', 'pipe', 'pipe'] });
    const stdout = collect(child.stdout);
    const stderr = collect(child.stderr);
    child.once('error', reject);
    child.once('close', (code) => {
      stdout.flush();
      stderr.flush();
      resolve({ code, seconds: since(), stdout: stdout.lines, stderr: stderr.lines });
    });
  });
}

/**
 * Seconds of each step, from the progress lines the command prints without a terminal
 * (`importing WireGuard configurations: 50000 of 50000`, always one at a step's end): the check
 * of every kind first (the plan), then each kind in its own transaction, one after the other.
 */
function stepSeconds(run: CommandRun): [string, number][] {
  const ends: [string, number][] = [];
  for (const line of run.stderr) {
    const match = /^(checking|importing) (.+): (\d+) of (\d+)$/.exec(line.text);
    if (match === null || match[3] !== match[4]) continue;
    const step = match[1] === 'checking' ? 'start-up and the plan (every kind checked)' : `importing ${match[2]}`;
    const previous = ends.findIndex(([name]) => name === step);
    if (previous >= 0) ends.splice(previous, 1);
    ends.push([step, line.at]);
  }
  return ends.map(([step, at], index) => [step, at - (index === 0 ? 0 : (ends[index - 1]?.[1] ?? 0))]);
}

/** The deployment under `folder`/eduvpn, its database in SQLite there or in MariaDB at `mysqlUrl`. */
async function writeDeployment(
  folder: string,
  mysqlUrl?: string,
): Promise<{ deployment: WrittenEduVpnDeployment; seconds: number }> {
  const started = performance.now();
  const deployment = await writeEduVpnDeployment(path.join(folder, 'eduvpn'), {
    ...(mysqlUrl === undefined ? {} : { mysqlUrl }),
    profiles: [
      {
        profileId: PROFILE,
        displayName: 'Employees',
        nodes: [{ nodeNumber: 0, hostName: 'vpn.example.org', ...RANGES }],
      },
    ],
    users: [],
    generated: {
      users: USERS,
      configurationsPerUser: CONFIGURATIONS_PER_USER,
      profileId: PROFILE,
      protocol: 'both',
      disabledEvery: 50,
    },
  });
  return { deployment, seconds: (performance.now() - started) / 1000 };
}

/** Imports the deployment into a fresh portal on `database`; prints the figures. */
async function importInto(
  label: string,
  database: string,
  folder: string,
  deployment: WrittenEduVpnDeployment,
): Promise<void> {
  const dataDir = path.join(folder, `data-${label}`);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const configFile = path.join(folder, `portal-${label}.json`);
  const config = testPortalConfigFile(
    {
      logLevel: 'warn',
      ProfileList: [
        {
          profileId: PROFILE,
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          nodeUrl: UNREACHABLE_NODE,
          ...RANGES,
        },
      ],
    },
    dataDir,
    database,
  );
  await writeFile(configFile, JSON.stringify(config));
  const { location } = deployment;
  const args = [
    'import',
    'eduvpn',
    '--config',
    configFile,
    '--eduvpn-config',
    location.configDir,
    '--eduvpn-data',
    location.dataDir,
    '--eduvpn-database',
    location.database,
    ...[...location.nodeWireGuardKeyFiles].flatMap(([node, file]) => ['--node-wireguard-key', `${node}=${file}`]),
  ];
  const output = (lines: readonly TimedLine[]): string => lines.map((line) => line.text).join('\n');
  /** One run of the command with `extra` arguments; fails the bench unless it exits with 0. */
  const checked = async (step: string, extra: readonly string[]): Promise<CommandRun> => {
    const run = await runCommand([...args, ...extra], path.join(folder, `usage-${label}-${step}`));
    if (run.code !== 0)
      throw new Error(`${step} into ${label} exited with ${run.code}:\n${output(run.stdout)}\n${output(run.stderr)}`);
    return run;
  };
  const cpu = (run: CommandRun): string =>
    run.usage === null
      ? ''
      : `, ${run.usage.cpuSeconds.toFixed(2)} s of CPU, peak RSS ${run.usage.peakMegabytes.toFixed(0)} MB`;
  const line = (what: string, text: string): void => console.log(`  ${what.padEnd(42)} ${text}`);

  const loadBefore = load();
  console.log(`import eduvpn into ${label}: ${(USERS * CONFIGURATIONS_PER_USER).toLocaleString('en')} configurations`);
  const dryRun = await checked('dry-run', ['--dry-run']);
  line('the dry run (start-up and the plan)', `${dryRun.seconds.toFixed(2)} s${cpu(dryRun)}`);
  const run = await checked('import', []);
  const summary = run.stdout.find((each) => each.text.startsWith('imported: '));
  if (summary === undefined) throw new Error(`import into ${label} printed no summary:\n${output(run.stdout)}`);
  console.log(`  ${summary.text}`);
  for (const [step, seconds] of stepSeconds(run)) line(step, `${seconds.toFixed(2)} s`);
  line(
    'the import (start-up included)',
    `${run.seconds.toFixed(2)} s (target < ${TARGET_SECONDS} s)${cpu(run)}; load before: ${loadBefore}, after: ${load()}`,
  );
  const again = await checked('again', []);
  if (!again.stdout.some((each) => each.text.startsWith('nothing to do')))
    throw new Error(`a second import into ${label} found something to do:\n${output(again.stdout)}`);
  line('a second run (nothing to do)', `${again.seconds.toFixed(2)} s${cpu(again)}`);
}

async function main(): Promise<void> {
  const folder = await mkdtemp(path.join(tmpdir(), 'bench-eduvpn-import-'));
  try {
    console.log(`${cpus().length} cores (${cpus()[0]?.model ?? '?'}), load average ${load()}`);
    // What every run below pays before it reads anything: starting the command from the sources.
    const startUp = await runCommand(['--version'], path.join(folder, 'usage-version'));
    console.log(
      `vpn-portal --version (the command's start-up, compiled through tsx): ${startUp.seconds.toFixed(2)} s${startUp.usage === null ? '' : `, ${startUp.usage.cpuSeconds.toFixed(2)} s CPU`}`,
    );
    const { deployment, seconds } = await writeDeployment(folder);
    console.log(
      `eduVPN deployment written in ${seconds.toFixed(1)} s: ${deployment.rowCounts.get('users')} users, ${deployment.rowCounts.get('wg_peers')} WireGuard peers, ${deployment.rowCounts.get('certificates')} certificates, ${deployment.rowCounts.get('connection_log')} connection log entries`,
    );
    await importInto('sqlite', `sqlite:${path.join(folder, 'portal.sqlite')}`, folder, deployment);
    const server = process.env['TEST_POSTGRES_URL'];
    if (server === undefined || server === '') console.log('PostgreSQL: no server (TEST_POSTGRES_URL), skipped');
    else {
      const postgres = await createPostgresDatabase();
      try {
        await importInto('postgres', postgres.url, folder, deployment);
      } finally {
        await postgres.drop();
      }
    }
    await fromMariadb(folder);
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

/** The same deployment kept in MariaDB, imported into a portal on SQLite. */
async function fromMariadb(folder: string): Promise<void> {
  let mariadb: Awaited<ReturnType<typeof startPrivateMariadb>>;
  try {
    mariadb = await startPrivateMariadb();
  } catch (error) {
    console.log(`MariaDB: ${(error as Error).message.split('\n')[0]}, skipped`);
    return;
  }
  try {
    const { url } = await mariadb.createDatabase();
    const { deployment, seconds } = await writeDeployment(path.join(folder, 'mariadb'), url);
    console.log(`eduVPN deployment written into MariaDB in ${seconds.toFixed(1)} s`);
    const portal = `sqlite:${path.join(folder, 'portal-from-mariadb.sqlite')}`;
    await importInto('sqlite-from-mariadb', portal, path.join(folder, 'mariadb'), deployment);
  } finally {
    await mariadb.stop();
  }
}

await main();
