// The searches the console and abuse reports need, each figure next to its target: `connection_log?ip=…&at=…` ("who
// had this address then") at 1,000,000 history rows (≤ 50 ms), and a `users` page by prefix at
// 100,000 users (≤ 150 ms p50). Run by bench/run.sh after bench/run.ts (BENCH_ONLY=search runs it
// alone); per database in BENCH_DATABASES, PostgreSQL on the server of TEST_POSTGRES_URL. The
// database is filled by SQL before the portal starts (a recursive query writes the rows: no
// client round trip per row); the portal runs as its own process (`vpn-portal serve`, dist/).
// The times are of the whole request on loopback, one at a time, so they are the server's time
// plus a fraction of a millisecond.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { Pool } from 'undici';
import { connectDatabase, migrateToLatest } from '../src/storage/database.js';
import { createPostgresDatabase } from './postgres-database.js';
import { round } from './process-figures.js';

/** BENCH_SEARCH_SCALE=0.01: a quick run at a hundredth of the size (to try the bench, not to measure). */
const SCALE = Number(process.env['BENCH_SEARCH_SCALE'] ?? 1);
const HISTORY_ROWS = Math.round(1_000_000 * SCALE);
const USERS = Math.round(100_000 * SCALE);
/** Distinct tunnel addresses the history cycles through (a /16 and then some, as a large pool would). */
const ADDRESSES = 60_000;
/** A session starts every 30 s and lasts an hour: about 120 open at any moment, each address reused every ~3 weeks. */
const SESSION_EVERY_S = 30;
const SESSION_S = 3600;
const HISTORY_START_S = Date.parse('2025-01-01T00:00:00Z') / 1000;
const SAMPLES = 200;
const PORT = 18_090;
const TARGETS = { whoHadMs: 50, usersPageMs: 150 };

type DatabaseKind = 'sqlite' | 'postgres';

const root = path.resolve(import.meta.dirname, '..');
const cli = path.join(root, 'dist', 'cli', 'main.js');
const apiPath = '/vpn-user-portal/admin/api/v1';

interface Figures {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly matchesPerQuery: number;
}

async function main(): Promise<void> {
  const databases = (process.env['BENCH_DATABASES'] ?? 'sqlite postgres')
    .split(/\s+/)
    .filter(Boolean) as DatabaseKind[];
  const results: Record<string, Record<string, Figures>> = {};
  for (const database of databases) {
    results[database] = await bench(database);
    // Each database's figures as soon as they are measured: a failure on the next loses none.
    console.log(JSON.stringify({ [database]: results[database] }));
  }
  console.log(
    `\nsearches, load average before: ${loadBefore.map((value) => value.toFixed(2)).join(' ')}, after: ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
  console.log('| database | measurement | p50 ms | p99 ms | max ms | rows per answer | target |');
  console.log('|---|---|---|---|---|---|---|');
  for (const [database, figures] of Object.entries(results)) {
    for (const [name, figure] of Object.entries(figures)) {
      const target = name.startsWith('connection_log') ? TARGETS.whoHadMs : TARGETS.usersPageMs;
      console.log(
        `| ${database} | ${name} | ${figure.p50} | ${figure.p99} | ${figure.max} | ${figure.matchesPerQuery} | ≤ ${target} ms p50: ${figure.p50 <= target ? 'met' : 'MISSED'} |`,
      );
    }
  }
  writeFileSync(
    path.join(root, 'bench', 'search-results.json'),
    `${JSON.stringify({ at: new Date().toISOString(), loadBefore, results }, null, 2)}\n`,
  );
}

const loadBefore = loadavg();

async function bench(database: DatabaseKind): Promise<Record<string, Figures>> {
  const work = mkdtempSync(path.join(tmpdir(), 'vpn-portal-bench-search-'));
  const target =
    database === 'postgres'
      ? await createPostgresDatabase()
      : { url: `sqlite:${path.join(work, 'data', 'db.sqlite')}`, drop: async () => {} };
  const configPath = path.join(work, 'config.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      baseUrl: `http://127.0.0.1:${PORT}/vpn-user-portal/`,
      listen: { host: '127.0.0.1', port: PORT },
      metrics: { listen: '127.0.0.1:0' },
      dataDir: path.join(work, 'data'),
      database: target.url,
      logLevel: 'warn',
      reconcileInterval: 'PT1H',
      // Keep the seeded history: it is older than the default retention.
      connectionLogRetention: 'P10Y',
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          wRangeFour: '10.40.0.0/14',
          wRangeSix: 'fd00::/64',
          nodeUrl: 'http://127.0.0.1:2',
        },
      ],
    }),
  );
  execFileSync(process.execPath, [cli, 'generate-secrets', '--admin-api', '--config', configPath], { stdio: 'ignore' });
  const secret = readFileSync(path.join(work, 'data', 'keys', 'admin-api.key'), 'utf8').trim();
  const auth = { authorization: `Bearer ${secret}` };
  const seedStarted = performance.now();
  await seed(
    database,
    target.url.startsWith('sqlite:')
      ? { dialect: 'sqlite', path: target.url.slice('sqlite:'.length) }
      : { dialect: 'postgres', url: target.url },
  );
  console.log(
    `${database}: seeded ${HISTORY_ROWS} history rows and ${USERS} users in ${Math.round((performance.now() - seedStarted) / 1000)} s`,
  );

  const portal = spawn(cli, ['serve', '--config', configPath], { stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = once(portal, 'exit');
  const client = new Pool(`http://127.0.0.1:${PORT}`, { connections: 1 });
  try {
    await waitForPortal(client, auth);
    const random = seededRandom(25);
    const figures: Record<string, Figures> = {};
    // A moment inside a random session, and its address: the CERT's question, which has an answer.
    const inSession = (): { address: number; moment: string } => {
      const session = Math.floor(random() * (HISTORY_ROWS - 100));
      const moment = HISTORY_START_S + session * SESSION_EVERY_S + Math.floor(random() * SESSION_S);
      return { address: session % ADDRESSES, moment: new Date(moment * 1000).toISOString() };
    };
    figures['connection_log?ip=IPv4&at=T (1M rows)'] = await measure(client, auth, () => {
      const { address, moment } = inSession();
      return `/connection_log?ip=${tunnelFour(address)}&at=${moment}`;
    });
    figures['connection_log?ip=IPv6 (long form)&at=T (1M rows)'] = await measure(client, auth, () => {
      const { address, moment } = inSession();
      return `/connection_log?ip=${encodeURIComponent(`fd00:0::${address.toString(16)}`)}&at=${moment}`;
    });
    figures['connection_log?at=T (1M rows, every session open then: ~120, first page)'] = await measure(
      client,
      auth,
      () => `/connection_log?at=${inSession().moment}`,
    );
    figures['connection_log?ip=client address (1M rows, every session, first page)'] = await measure(
      client,
      auth,
      () => `/connection_log?ip=${clientAddress(Math.floor(random() * 50_000))}`,
    );
    figures['users?prefix=…&limit=100 (100k users)'] = await measure(
      client,
      auth,
      () => `/users?prefix=${userPrefix(random)}&limit=100`,
    );
    figures['users?limit=100&cursor=… (100k users, a page deep in the list)'] = await measure(
      client,
      auth,
      () => `/users?limit=100&cursor=${Buffer.from(userId(Math.floor(random() * USERS))).toString('base64url')}`,
    );
    return figures;
  } finally {
    await client.close();
    portal.kill('SIGTERM');
    await exited;
    await target.drop();
    rmSync(work, { recursive: true, force: true });
  }
}

/** Times SAMPLES requests (after 20 not counted, to warm up), one at a time. */
async function measure(client: Pool, auth: Record<string, string>, next: () => string): Promise<Figures> {
  const latencies: number[] = [];
  let rows = 0;
  for (let index = 0; index < SAMPLES + 20; index++) {
    const target = next();
    const started = performance.now();
    const response = await client.request({ method: 'GET', path: `${apiPath}${target}`, headers: auth });
    const text = await response.body.text();
    const ms = performance.now() - started;
    if (response.statusCode !== 200) throw new Error(`${target}: ${response.statusCode} ${text}`);
    if (process.env['BENCH_SEARCH_DEBUG'] === '1' && index < 3) console.log(target, text.slice(0, 200));
    if (index < 20) continue;
    latencies.push(ms);
    const answer = JSON.parse(text) as { connection_log?: unknown[]; users?: unknown[] };
    rows += (answer.connection_log ?? answer.users ?? []).length;
  }
  latencies.sort((a, b) => a - b);
  const at = (fraction: number) =>
    round(latencies[Math.min(latencies.length - 1, Math.floor(fraction * latencies.length))] ?? Number.NaN);
  return {
    p50: at(0.5),
    p99: at(0.99),
    max: round(latencies.at(-1) ?? Number.NaN),
    matchesPerQuery: round(rows / SAMPLES),
  };
}

const tunnelFour = (address: number): string => `10.40.${Math.floor(address / 256)}.${address % 256}`;
const clientAddress = (address: number): string => `100.64.${Math.floor(address / 256)}.${address % 256}`;
const userId = (index: number): string => `user${String(index).padStart(6, '0')}@example.org`;
/** `user0` and 1–3 more digits of an existing id: 10,000, 1,000 or 100 matches (a page of 100). */
const userPrefix = (random: () => number): string =>
  `user${String(Math.floor(random() * USERS))
    .padStart(6, '0')
    .slice(0, 2 + Math.floor(random() * 3))}`;

/** The history and the users, written by the database itself from a recursive counter. */
async function seed(
  database: DatabaseKind,
  location: { dialect: 'sqlite'; path: string } | { dialect: 'postgres'; url: string },
): Promise<void> {
  const db = connectDatabase(location);
  try {
    await migrateToLatest(db);
    const count = (limit: number) =>
      sql.raw(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${limit - 1})`);
    if (database === 'sqlite') {
      // Numbers as literals: better-sqlite3 binds a JS number as REAL, and 5264 / 256.0 is 20.5625.
      const at = (offset: string) => `strftime('%Y-%m-%dT%H:%M:%S+00:00', ${HISTORY_START_S} + ${offset}, 'unixepoch')`;
      await sql`${count(HISTORY_ROWS)}
        INSERT INTO connection_log (log_id, user_id, profile_id, vpn_proto, connection_id, node_number, ip_four, ip_six, originating_ip, connected_at, disconnected_at, bytes_in, bytes_out)
        SELECT printf('%016d', i), printf('user%06d@example.org', (i * 7919) % ${sql.lit(USERS)}), 'employees', 'wireguard', printf('key%07d', i), i % 4,
          '10.40.' || ((i % ${sql.lit(ADDRESSES)}) / 256) || '.' || ((i % ${sql.lit(ADDRESSES)}) % 256), printf('fd00::%x', i % ${sql.lit(ADDRESSES)}),
          '100.64.' || (((i * 31) % 50000) / 256) || '.' || (((i * 31) % 50000) % 256),
          ${sql.raw(at(`i * ${SESSION_EVERY_S}`))},
          CASE WHEN i >= ${sql.lit(HISTORY_ROWS - 100)} THEN NULL ELSE ${sql.raw(at(`i * ${SESSION_EVERY_S} + ${SESSION_S}`))} END, 1000, 2000
        FROM n`.execute(db);
      await sql`${count(USERS)}
        INSERT INTO users (user_id, created_at, last_seen) SELECT printf('user%06d@example.org', i), '2025-01-01T00:00:00+00:00', '2025-01-01T00:00:00+00:00' FROM n`.execute(
        db,
      );
      await sql`ANALYZE`.execute(db);
    } else {
      const at = (offset: string) =>
        `to_char(to_timestamp(${HISTORY_START_S} + ${offset}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')`;
      await sql`
        INSERT INTO connection_log (log_id, user_id, profile_id, vpn_proto, connection_id, node_number, ip_four, ip_six, originating_ip, connected_at, disconnected_at, bytes_in, bytes_out)
        SELECT lpad(i::text, 16, '0'), 'user' || lpad(((i * 7919) % ${USERS})::text, 6, '0') || '@example.org', 'employees', 'wireguard', 'key' || lpad(i::text, 7, '0'), i % 4,
          '10.40.' || ((i % ${ADDRESSES}) / 256) || '.' || ((i % ${ADDRESSES}) % 256), 'fd00::' || to_hex(i % ${ADDRESSES}),
          '100.64.' || (((i * 31) % 50000) / 256) || '.' || (((i * 31) % 50000) % 256),
          ${sql.raw(at(`i * ${SESSION_EVERY_S}`))},
          CASE WHEN i >= ${HISTORY_ROWS - 100} THEN NULL ELSE ${sql.raw(at(`i * ${SESSION_EVERY_S} + ${SESSION_S}`))} END, 1000, 2000
        FROM generate_series(0::bigint, ${HISTORY_ROWS - 1}) AS i`.execute(db);
      await sql`
        INSERT INTO users (user_id, created_at, last_seen)
        SELECT 'user' || lpad(i::text, 6, '0') || '@example.org', '2025-01-01T00:00:00+00:00', '2025-01-01T00:00:00+00:00' FROM generate_series(0, ${USERS - 1}) AS i`.execute(
        db,
      );
      await sql`ANALYZE`.execute(db);
    }
  } finally {
    await db.destroy();
  }
}

async function waitForPortal(client: Pool, auth: Record<string, string>): Promise<void> {
  for (let attempt = 0; attempt < 300; attempt++) {
    try {
      const response = await client.request({ method: 'GET', path: `${apiPath}/profiles`, headers: auth });
      await response.body.text();
      if (response.statusCode === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('portal did not start');
}

/** The same sequence of queries in every run (mulberry32). */
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

await main();
