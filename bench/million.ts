// `BENCH_ONLY=million npm run bench`: the portal at the size of a national research network, on
// PostgreSQL — 1,000,000 WireGuard configurations of 500,000 users over fifty profiles, one
// stand-in node each (bench/million/nodes.ts, all in one process), and 10,000,000 rows of
// session history, written by bulk SQL (bench/million/build.ts). Then, with `vpn-portal serve`
// (dist/) on it, each figure beside its target:
//  1. the portal's CPU per create at 1,000,000 against an empty database (same config, nodes);
//  2. the start-up full reconcile pass over the fifty nodes, which already hold their peers;
//  3. every paged listing (first page and a deep one), the address lookups (connection_log?ip=&at=,
//     attribution) and users?prefix=;
//  4. the daily housekeeping over the history, run by a second instance's start-up pass while the
//     first takes creates at a modest rate: their p99 while the housekeeping ran (its own log
//     lines say when), and over the second instance's whole start;
//  5. the portal's peak RSS;
//  6. the plan of every statement of 3 and 4, as the portal sends it (auto_explain,
//     bench/million/explain.ts): a sequential scan of a table of more than a few thousand rows
//     fails the bench.
// BENCH_MILLION_SCALE=0.01 builds a hundredth (10,000 configurations, 100,000 history rows) to try it;
// BENCH_MILLION_CLI names another build of the portal to run than dist/cli/main.js (a branch's own).
// The exit status is 1 when a plan scans a large table sequentially.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Pool } from 'undici';
import {
  buildDataSet,
  clientAddress,
  dataSetAt,
  NODES,
  profileId,
  rangeFour,
  rangeSix,
  tunnelFour,
  userId,
} from './million/build.js';
import {
  checkPlans,
  NAMED_STATEMENTS,
  startExplaining,
  statementName,
  stopExplaining,
  type PlanCheck,
} from './million/explain.js';
import {
  call,
  forSeconds,
  reconciledNodes,
  runCreates,
  summarise,
  timeCalls,
  waitFor,
  type Api,
  type Creates,
  type Latencies,
} from './million/measure.js';
import { createPostgresDatabase } from './postgres-database.js';
import { peakRssMb, round, stopProcess } from './process-figures.js';

const SCALE = Number(process.env['BENCH_MILLION_SCALE'] ?? 1);
const PORT = 18_300;
const OTHER_PORT = 18_301;
const METRICS_PORT = 18_302;
const OTHER_METRICS_PORT = 18_303;
const FIRST_NODE_PORT = 18_310;
const LOOKUP_SAMPLES = 200;
const PAGE_SAMPLES = 20;
const TARGETS = {
  createGrowth: 1.2,
  passSeconds: 60,
  pageMs: 100,
  lookupP99Ms: 50,
  prefixP99Ms: 20,
  peakRssMb: 500,
  housekeepingSeconds: 300,
  createDuringHousekeepingP99Ms: 100,
} as const;

const root = path.resolve(import.meta.dirname, '..');
const cli = process.env['BENCH_MILLION_CLI'] ?? path.join(root, 'dist', 'cli', 'main.js');
const set = dataSetAt(SCALE);
const nowS = Math.floor(Date.now() / 1000);
const loadBefore = loadavg();
const work = mkdtempSync(path.join(tmpdir(), 'vpn-portal-bench-million-'));
const lines: string[] = [];

/** A figure beside its target: printed at once (a later failure loses nothing) and kept for the summary. */
function report(name: string, value: string, target?: { text: string; met: boolean }): void {
  const line = `| ${name} | ${value} | ${target === undefined ? '' : `${target.text}: ${target.met ? 'met' : 'MISSED'}`} |`;
  lines.push(line);
  console.log(line);
}

function writeConfig(name: string, databaseUrl: string, port: number, metricsPort: number): string {
  const configPath = path.join(work, `${name}.json`);
  writeFileSync(
    configPath,
    JSON.stringify({
      baseUrl: `http://127.0.0.1:${port}/vpn-user-portal/`,
      listen: { host: '127.0.0.1', port },
      metrics: { listen: `127.0.0.1:${metricsPort}` },
      dataDir: path.join(work, 'data'),
      database: databaseUrl,
      logLevel: 'info',
      reconcileInterval: 'PT1H',
      Log: { originatingIp: true },
      ProfileList: Array.from({ length: NODES }, (_, node) => ({
        profileId: profileId(node),
        displayName: `Profile ${node}`,
        hostName: 'vpn.example.org',
        wRangeFour: rangeFour(node),
        wRangeSix: rangeSix(node),
        nodeUrl: `http://127.0.0.1:${FIRST_NODE_PORT + node}`,
        onNode: [node],
      })),
    }),
  );
  return configPath;
}

async function startNodes(databaseUrl?: string): Promise<ChildProcess> {
  const args = [
    '--import',
    'tsx',
    path.join(root, 'bench', 'million', 'nodes.ts'),
    String(FIRST_NODE_PORT),
    String(NODES),
  ];
  const nodes = spawn(process.execPath, databaseUrl === undefined ? args : [...args, databaseUrl], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await once(nodes.stdout, 'data');
  return nodes;
}

function startPortal(configPath: string, logName: string): { portal: ChildProcess; log: string } {
  const log = path.join(work, `${logName}.log`);
  const portal = spawn(`${cli}`, ['serve', '--config', configPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  portal.stdout?.on('data', (chunk: Buffer) => writeFileSync(log, chunk, { flag: 'a' }));
  return { portal, log };
}

async function apiOf(port: number, auth: Record<string, string>, connections: number): Promise<Api> {
  const api = { pool: new Pool(`http://127.0.0.1:${port}`, { connections, pipelining: 1 }), auth };
  await waitFor(
    `the portal on port ${port} answers`,
    async () => ((await call(api, 'GET', '/profiles').catch(() => undefined))?.status === 200 ? true : undefined),
    300,
  );
  return api;
}

/**
 * Every node reached by a pass of the instance whose metrics are on `metricsPort`: the longest
 * node pass, in s. Asked once a second: each scrape counts the configurations per pool.
 */
async function passOverAllNodes(metricsPort: number, timeoutS: number): Promise<number> {
  return waitFor(
    'a reconcile pass over all nodes',
    async () => {
      const nodes = await reconciledNodes(metricsPort);
      return nodes.size === NODES ? Math.max(...nodes.values()) : undefined;
    },
    timeoutS,
    1000,
  );
}

/** The time (ms since the epoch) of the portal's first log line with this message, once written. */
function loggedAt(log: string, message: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(log, 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    if (!line.includes(`"${message}"`)) continue;
    return (JSON.parse(line) as { time: number }).time;
  }
  return undefined;
}

const atom = (epochS: number): string => `${new Date(epochS * 1000).toISOString().slice(0, 19)}+00:00`;
const randomOf = (() => {
  let state = 35;
  return (below: number): number => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * below);
  };
})();

/** A session of the history (bench/million/build.ts's formulas): its configuration and a moment inside it. */
function historySession(lastWeek = false): { configuration: number; moment: string } {
  // The client's own address is kept for a week (bench/million/build.ts): those lookups ask about the last six days.
  const j = lastWeek
    ? set.historyRows - 1 - randomOf(Math.floor((set.historyRows * 6) / 32))
    : randomOf(set.historyRows);
  const stepMs = Math.floor((32 * 86_400 * 1000) / set.historyRows);
  const startS = nowS - 33 * 86_400 + Math.floor((j * stepMs) / 1000);
  return {
    configuration: (j * 7919) % set.configurations,
    moment: new Date((startS + randomOf(3600)) * 1000).toISOString().replace('.000', ''),
  };
}

async function measureEmpty(auth: Record<string, string>): Promise<Creates> {
  const target = await createPostgresDatabase();
  const nodes = await startNodes();
  const { portal } = startPortal(writeConfig('empty', target.url, PORT, METRICS_PORT), 'empty');
  try {
    const api = await apiOf(PORT, auth, 16);
    await runCreates(api, portal.pid ?? 0, { workers: 16, stop: forSeconds(3), prefix: 'warm-' });
    const creates = await runCreates(api, portal.pid ?? 0, { workers: 16, stop: forSeconds(10), prefix: 'empty-' });
    await api.pool.close();
    return creates;
  } finally {
    await stopProcess(portal);
    await stopProcess(nodes);
    await target.drop();
  }
}

/** The paged listings and the lookups, each as the Admin API is asked; every one answers 200. */
function listingTargets(deepLog: string): Record<string, () => string> {
  const deepUser = () => Buffer.from(userId(Math.floor(set.users * 0.9) + randomOf(100))).toString('base64url');
  const aUser = () => userId(randomOf(set.users));
  const aProfile = () => profileId(randomOf(NODES));
  return {
    'users?limit=100 (first page)': () => '/users?limit=100',
    'users?limit=100&cursor= (deep page, 90 %)': () => `/users?limit=100&cursor=${deepUser()}`,
    'disabled_users?limit=100 (first page)': () => '/disabled_users?limit=100',
    'disabled_users?limit=100&cursor= (deep page)': () => `/disabled_users?limit=100&cursor=${deepUser()}`,
    'connection_log (first page of 100)': () => '/connection_log',
    'connection_log&cursor= (deep page, 90 % back)': () => `/connection_log?cursor=${deepLog}`,
    'connection_log?user_id= (first page)': () => `/connection_log?user_id=${encodeURIComponent(aUser())}`,
    'connection_log?profile_id= (first page)': () => `/connection_log?profile_id=${aProfile()}`,
    'connection_log?profile_id=&cursor= (deep page)': () =>
      `/connection_log?profile_id=${aProfile()}&cursor=${deepLog}`,
    'audit_log (first page)': () => '/audit_log',
    'user_configuration_list?user_id=': () => `/user_configuration_list?user_id=${encodeURIComponent(aUser())}`,
  };
}

function lookupTargets(): Record<string, () => string> {
  return {
    'connection_log?ip=IPv4&at=': () => {
      const { configuration, moment } = historySession();
      return `/connection_log?ip=${tunnelFour(configuration)}&at=${moment}`;
    },
    'attribution?ip=IPv4&at=': () => {
      const { configuration, moment } = historySession();
      return `/attribution?ip=${tunnelFour(configuration)}&at=${moment}&reason=bench`;
    },
    'attribution?ip=client address&at=': () => {
      const { configuration, moment } = historySession(true);
      return `/attribution?ip=${clientAddress(configuration)}&at=${moment}&reason=bench`;
    },
  };
}

const prefixTarget = (): string => `/users?prefix=${userId(randomOf(set.users)).slice(0, 4 + randomOf(3))}&limit=100`;

/** A cursor 90 % of the way back into the history (the portal's cursor: its connected_at and log_id). */
async function deepLogCursor(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ connected_at: string; log_id: string }>(
      'SELECT connected_at, log_id FROM connection_log WHERE connected_at >= $1 ORDER BY connected_at LIMIT 1',
      [atom(nowS - 33 * 86_400 + Math.floor(0.1 * 32 * 86_400))],
    );
    const row = rows[0];
    if (row === undefined) throw new Error('no history to page into');
    return Buffer.from(JSON.stringify([row.connected_at, row.log_id])).toString('base64url');
  } finally {
    await client.end();
  }
}

async function setHousekeepingDay(url: string, day: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("UPDATE portal_state SET value = $1 WHERE key = 'housekeeping.day'", [day]);
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  console.log(
    `million: ${set.configurations} configurations of ${set.users} users on ${NODES} nodes, ${set.historyRows} history rows (scale ${SCALE}); ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, load average ${loadBefore.map((value) => value.toFixed(2)).join(' ')}`,
  );
  writeConfig('secrets', 'postgres://unused@127.0.0.1/unused', PORT, METRICS_PORT);
  execFileSync(
    process.execPath,
    [cli, 'generate-secrets', '--admin-api', '--config', path.join(work, 'secrets.json')],
    {
      stdio: 'ignore',
    },
  );
  const secret = readFileSync(path.join(work, 'data', 'keys', 'admin-api.key'), 'utf8').trim();
  const auth = { authorization: `Bearer ${secret}` };
  console.log('| measurement | figure | target |\n|---|---|---|');

  const empty = await measureEmpty(auth);
  report(
    'create, empty database (16 at a time, 10 s)',
    `${empty.perSecond}/s, p99 ${empty.p99} ms, portal CPU ${empty.cpuPerCreateUs} µs/create, ${empty.errors} errors`,
  );

  const target = await createPostgresDatabase();
  const children: ChildProcess[] = [];
  const pools: Api[] = [];
  try {
    const buildStarted = performance.now();
    const took = await buildDataSet(target.url, set, nowS);
    report(
      'data set built by bulk SQL',
      `${Math.round((performance.now() - buildStarted) / 1000)} s (${Object.entries(took)
        .map(([step, seconds]) => `${step} ${seconds} s`)
        .join(', ')})`,
    );

    const nodes = await startNodes(target.url);
    children.push(nodes);
    const started = performance.now();
    const { portal } = startPortal(writeConfig('first', target.url, PORT, METRICS_PORT), 'first');
    children.push(portal);
    const longestNodePass = await passOverAllNodes(METRICS_PORT, 1800);
    const passWall = round((performance.now() - started) / 1000);
    report(
      `start-up full reconcile pass over ${NODES} nodes holding their peers`,
      `${passWall} s from the portal's start (longest node ${round(longestNodePass)} s)`,
      { text: `≤ ${TARGETS.passSeconds} s`, met: passWall <= TARGETS.passSeconds },
    );
    const api = await apiOf(PORT, auth, 16);
    pools.push(api);
    const pid = portal.pid ?? 0;
    await runCreates(api, pid, { workers: 16, stop: forSeconds(3), prefix: 'warm-' });
    const full = await runCreates(api, pid, { workers: 16, stop: forSeconds(10), prefix: 'full-' });
    const growth = Math.round((full.cpuPerCreateUs / empty.cpuPerCreateUs) * 100) / 100;
    report(
      `create at ${set.configurations} (16 at a time, 10 s)`,
      `${full.perSecond}/s, p99 ${full.p99} ms, portal CPU ${full.cpuPerCreateUs} µs/create, ${full.errors} errors; ${growth} × empty`,
      { text: `≤ ${TARGETS.createGrowth} × empty`, met: growth <= TARGETS.createGrowth && full.errors === 0 },
    );

    const deepLog = await deepLogCursor(target.url);
    const listings = listingTargets(deepLog);
    for (const [name, next] of Object.entries(listings)) {
      const figures = await timeCalls(api, PAGE_SAMPLES, next);
      report(name, latencyText(figures), {
        text: `≤ ${TARGETS.pageMs} ms a page (p99)`,
        met: figures.p99 <= TARGETS.pageMs,
      });
    }
    for (const [name, next] of Object.entries(lookupTargets())) {
      const figures = await timeCalls(api, LOOKUP_SAMPLES, next, 20);
      report(name, latencyText(figures), {
        text: `≤ ${TARGETS.lookupP99Ms} ms p99`,
        met: figures.p99 <= TARGETS.lookupP99Ms,
      });
    }
    const prefix = await timeCalls(api, LOOKUP_SAMPLES, prefixTarget, 20);
    report('users?prefix=…&limit=100', latencyText(prefix), {
      text: `≤ ${TARGETS.prefixP99Ms} ms p99`,
      met: prefix.p99 <= TARGETS.prefixP99Ms,
    });

    // The daily housekeeping: due again (yesterday's run is the last), run by a second instance's
    // start-up pass, every statement of which is explained, while the first takes creates.
    await setHousekeepingDay(target.url, atom(nowS - 86_400).slice(0, 10));
    const logOffset = await startExplaining(target.url);
    let housekeepingOver = false;
    const creating = runCreates(api, pid, {
      workers: 4,
      stop: () => housekeepingOver,
      prefix: 'during-',
      everyMs: 100,
    });
    const other = startPortal(writeConfig('second', target.url, OTHER_PORT, OTHER_METRICS_PORT), 'second');
    children.push(other.portal);
    let housekeeping: { startedMs: number; doneMs: number; passEndedMs: number } | undefined;
    try {
      await passOverAllNodes(OTHER_METRICS_PORT, 1800);
      const passEndedMs = Date.now();
      const doneMs = await waitFor('the housekeeping', async () => loggedAt(other.log, 'housekeeping done'), 1800);
      const startedMs = loggedAt(other.log, 'housekeeping started') ?? passEndedMs;
      housekeeping = { startedMs, doneMs, passEndedMs };
      // A second more of creates after it: those that were under way when it ended are measured whole.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    } finally {
      housekeepingOver = true;
    }
    const during = await creating;
    if (housekeeping === undefined) throw new Error('the housekeeping did not run');
    const seconds = round((housekeeping.doneMs - housekeeping.startedMs) / 1000);
    report(
      `daily housekeeping over ${set.historyRows} history rows (second instance, after its pass; from its log)`,
      `${seconds} s`,
      { text: `≤ ${TARGETS.housekeepingSeconds} s`, met: seconds <= TARGETS.housekeepingSeconds },
    );
    // The creates the housekeeping could have held up: under way at some moment of its run.
    const { startedMs, doneMs } = housekeeping;
    const overlapping = during.timeline.filter(
      (create) => create.sentAtMs <= doneMs && create.sentAtMs + create.ms >= startedMs,
    );
    const held = summarise(
      overlapping.map((create) => create.ms),
      overlapping.filter((create) => !create.ok).length,
    );
    report(
      'creates on the first instance during the housekeeping (4 workers, 100 ms apart)',
      `${held.count} creates, p50 ${held.p50} ms, p99 ${held.p99} ms, max ${held.max} ms, ${held.errors} errors`,
      {
        text: `p99 ≤ ${TARGETS.createDuringHousekeepingP99Ms} ms`,
        met: held.count > 0 && held.p99 <= TARGETS.createDuringHousekeepingP99Ms && held.errors === 0,
      },
    );
    report(
      "… and during the second instance's whole start (its full pass over the fifty nodes, then the housekeeping)",
      `${during.count} creates, ${during.perSecond}/s, p50 ${during.p50} ms, p99 ${during.p99} ms, ${during.errors} errors`,
    );
    // The listings and lookups once more, through the second instance: their plans too.
    const otherApi = await apiOf(OTHER_PORT, auth, 1);
    pools.push(otherApi);
    for (const next of [...Object.values(listings), ...Object.values(lookupTargets()), prefixTarget])
      await timeCalls(otherApi, 3, next, 0);
    await stopExplaining(target.url);
    const plans = await checkPlans(target.url, logOffset);
    reportPlans(plans, housekeeping.passEndedMs);

    const rss = peakRssMb(pid);
    report('peak portal RSS (first instance, after all of the above)', `${rss} MB`, {
      text: `≤ ${TARGETS.peakRssMb} MB`,
      met: rss <= TARGETS.peakRssMb,
    });
  } finally {
    for (const api of pools) await api.pool.close();
    for (const child of children.reverse()) await stopProcess(child);
    await target.drop();
    rmSync(work, { recursive: true, force: true });
  }
  console.log(
    `\nmillion, ${new Date().toISOString()}: load average before ${loadBefore.map((value) => value.toFixed(2)).join(' ')}, after ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
  console.log('| measurement | figure | target |\n|---|---|---|');
  for (const line of lines) console.log(line);
}

function latencyText(figures: Latencies): string {
  return `p50 ${figures.p50} ms, p99 ${figures.p99} ms, max ${figures.max} ms (${figures.count} calls)`;
}

/**
 * Sequential scans logged before `passEndedMs` are the second instance's reconcile pass and the
 * /metrics scrapes that watched it: printed, not failing, except in the statements the check
 * names (a node's wanted peers, the count per pool of /metrics), which are held to it like
 * every later one, of the housekeeping, a listing or a lookup. Those named statements' durations
 * are printed too (the wanted peers: one read per node of the second instance's pass).
 */
function reportPlans(plans: PlanCheck, passEndedMs: number): void {
  const checked = plans.seqScans.filter(
    (scan) => !(scan.at < passEndedMs) || statementName(scan.statement) !== undefined,
  );
  const passOnes = plans.seqScans.filter((scan) => !checked.includes(scan));
  report(
    'plans of the housekeeping, listings, lookups, wanted peers and /metrics counts as the portal sent them',
    `${plans.plans} plans, ${checked.length} statements with a sequential scan of a large table`,
    { text: 'no sequential scan', met: checked.length === 0 },
  );
  if (checked.length > 0) process.exitCode = 1;
  for (const scan of checked)
    console.log(`  Seq Scan on ${scan.table} (${scan.rows} rows): ${scan.statement.slice(0, 400)}`);
  for (const scan of passOnes)
    console.log(
      `  (the pass or /metrics, not checked) Seq Scan on ${scan.table} (${scan.rows} rows): ${scan.statement.slice(0, 400)}`,
    );
  for (const name of Object.keys(NAMED_STATEMENTS)) {
    const times = summarise(plans.durations.get(name) ?? [], 0);
    report(
      `${name}, as the server ran it (second instance)`,
      times.count === 0 ? 'not seen' : `p50 ${times.p50} ms, max ${times.max} ms (${times.count} statements)`,
    );
  }
}

await main();
