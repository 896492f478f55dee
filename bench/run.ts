// `npm run bench` (bench/run.sh): throughput and latency of the Admin API on this machine,
// once on SQLite and once on PostgreSQL (the throw-away server bench/run.sh starts, or
// TEST_POSTGRES_URL). For each database:
//  1. create: concurrency 16 for 20 s against an empty database;
//  2. the database is filled to 100,000 users and configurations;
//  3. create again for 5 s (allocation cost must not grow with the pool);
//  4. connection_list?show_all=on and users latency at 100,000 configurations;
//  5. peak RSS of the portal process.
// The portal runs as its own process (`vpn-portal serve`), built from dist/.
// BENCH_DATABASES="sqlite" (or "postgres") measures one database only.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { clientAddressesAt } from '../src/wireguard/address-pool.js';

const CONCURRENCY = 16;
const CREATE_SECONDS = Number(process.env['BENCH_CREATE_SECONDS'] ?? 20);
const TARGET_CONFIGURATIONS = 100_000;
const LIST_SAMPLES = 20;
const RANGE_FOUR = '10.64.0.0/14';
const RANGE_SIX = 'fd64::/64';
const PORT = 18_080;
const SEED_BATCH = 1000;

type DatabaseKind = 'sqlite' | 'postgres';

interface Figures {
  count: number;
  perSecond: number;
  p50: number;
  p99: number;
  errors: number;
}

interface DatabaseResults {
  createEmptyDatabase: Figures;
  configurationsInDatabase: number;
  createAt100kConfigurations: Figures;
  connectionListShowAllAt100k: Figures;
  usersAt100k: Figures;
  peakRssMb: number;
}

const root = path.resolve(import.meta.dirname, '..');
const cli = path.join(root, 'dist', 'cli', 'main.js');
const base = `http://127.0.0.1:${PORT}/vpn-user-portal/admin/api/v1`;

const databases = (process.env['BENCH_DATABASES'] ?? 'sqlite postgres').split(/\s+/).filter(Boolean) as DatabaseKind[];
const results: { machine: Record<string, unknown> } & Partial<Record<DatabaseKind, DatabaseResults>> = {
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
};
for (const database of databases) {
  if (database !== 'sqlite' && database !== 'postgres') throw new Error(`BENCH_DATABASES takes sqlite and/or postgres, not "${String(database)}"`);
  console.log(`measuring on ${database} …`);
  results[database] = await bench(database);
}
mkdirSync(path.join(root, 'bench'), { recursive: true });
writeFileSync(path.join(root, 'bench', 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
printTable(results);

async function bench(database: DatabaseKind): Promise<DatabaseResults> {
  const work = mkdtempSync(path.join(tmpdir(), 'vpn-portal-bench-'));
  const target = database === 'postgres' ? await createPostgresDatabase() : { url: `sqlite:${path.join(work, 'data', 'db.sqlite')}`, drop: async () => {} };
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
      ProfileList: [
        { profileId: 'bench', displayName: 'Bench', hostName: 'vpn.example.org', wRangeFour: RANGE_FOUR, wRangeSix: RANGE_SIX, nodeUrl: 'http://127.0.0.1:2' },
      ],
    }),
  );
  execFileSync(process.execPath, [cli, 'generate-secrets', '--admin-api', '--config', configPath], { stdio: 'ignore' });
  const secret = readFileSync(path.join(work, 'data', 'keys', 'admin-api.key'), 'utf8').trim();
  const auth = { authorization: `Bearer ${secret}` };

  // Started through its shebang, with the same heap cap as `vpn-portal serve` in production.
  const portal = spawn(cli, ['serve', '--config', configPath], { stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    await waitForPortal(auth);
    const createEmptyDatabase = await measureCreates(CREATE_SECONDS, 'u', auth);
    const configurationsInDatabase = database === 'postgres' ? await seedPostgres(target.url, TARGET_CONFIGURATIONS) : seedSqlite(work, TARGET_CONFIGURATIONS);
    const createAt100kConfigurations = await measureCreates(5, 'late', auth);
    const connectionListShowAllAt100k = await measureGets('/connection_list?show_all=on', LIST_SAMPLES, auth);
    const usersAt100k = await measureGets('/users', LIST_SAMPLES, auth);
    const peakRssMb = peakRss(portal.pid ?? 0);
    return { createEmptyDatabase, configurationsInDatabase, createAt100kConfigurations, connectionListShowAllAt100k, usersAt100k, peakRssMb };
  } finally {
    await stop(portal);
    await target.drop();
    rmSync(work, { recursive: true, force: true });
  }
}

async function stop(portal: ChildProcess): Promise<void> {
  if (portal.exitCode !== null) return;
  const exited = new Promise((resolve) => portal.once('exit', resolve));
  portal.kill('SIGTERM');
  await exited;
}

/** A fresh database on the PostgreSQL server of TEST_POSTGRES_URL, dropped afterwards. */
async function createPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const server = process.env['TEST_POSTGRES_URL'];
  if (server === undefined || server === '')
    throw new Error('the PostgreSQL figures need a server: run "npm run bench" (bench/run.sh starts one) or set TEST_POSTGRES_URL');
  const name = `vpn_portal_bench_${randomBytes(6).toString('hex')}`;
  const admin = async (statement: string): Promise<void> => {
    const client = new pg.Client({ connectionString: server });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return { url: url.href, drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

async function waitForPortal(auth: Record<string, string>): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      await fetch(`${base}/users`, { headers: auth });
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw new Error('portal did not start');
}

async function measureCreates(seconds: number, prefix: string, auth: Record<string, string>): Promise<Figures> {
  const latencies: number[] = [];
  let errors = 0;
  let sequence = 0;
  const deadline = performance.now() + seconds * 1000;
  const worker = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const body = new URLSearchParams({ user_id: `${prefix}${sequence++ % 5000}`, profile_id: 'bench' });
      const started = performance.now();
      const response = await fetch(`${base}/create`, { method: 'POST', body, headers: { ...auth, accept: 'application/x-wireguard-profile' } });
      await response.arrayBuffer();
      latencies.push(performance.now() - started);
      if (response.status !== 200) errors++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return summarise(latencies, (performance.now() - started) / 1000, errors);
}

async function measureGets(target: string, samples: number, auth: Record<string, string>): Promise<Figures> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  for (let index = 0; index < samples; index++) {
    const begin = performance.now();
    const response = await fetch(`${base}${target}`, { headers: auth });
    await response.arrayBuffer();
    latencies.push(performance.now() - begin);
    if (response.status !== 200) errors++;
  }
  return summarise(latencies, (performance.now() - started) / 1000, errors);
}

function timestamps(): { now: string; expires: string } {
  return {
    now: `${new Date().toISOString().slice(0, 19)}+00:00`,
    expires: `${new Date(Date.now() + 90 * 86_400_000).toISOString().slice(0, 19)}+00:00`,
  };
}

/** Fills the SQLite database directly (fast) up to `target` configurations, one new user each. */
function seedSqlite(work: string, target: number): number {
  const db = new SqliteDatabase(path.join(work, 'data', 'db.sqlite'));
  db.pragma('busy_timeout = 10000');
  const { count } = db.prepare('SELECT COUNT(*) AS count FROM wg_peers').get() as { count: number };
  const { next } = db.prepare("SELECT next_index AS next FROM ip_pools WHERE profile_id = 'bench'").get() as { next: number };
  const { now, expires } = timestamps();
  const insertUser = db.prepare('INSERT INTO users (user_id, created_at, last_seen, auth_data) VALUES (?, ?, ?, NULL)');
  const insertPeer = db.prepare(
    "INSERT INTO wg_peers (public_key, user_id, profile_id, node_number, display_name, ip_four, ip_six, pool_index, created_at, expires_at, auth_key) VALUES (?, ?, 'bench', 0, 'Seeded', ?, ?, ?, ?, ?, NULL)",
  );
  const missing = target - count;
  db.transaction(() => {
    for (let offset = 0; offset < missing; offset++) {
      const index = next + offset;
      const userId = `seed${index}`;
      const addresses = clientAddressesAt(RANGE_FOUR, RANGE_SIX, index);
      insertUser.run(userId, now, now);
      insertPeer.run(fakeKey(index), userId, addresses.ipFour, addresses.ipSix, index, now, expires);
    }
    db.prepare("UPDATE ip_pools SET next_index = ? WHERE profile_id = 'bench'").run(next + missing);
  })();
  const { total } = db.prepare('SELECT COUNT(*) AS total FROM wg_peers').get() as { total: number };
  db.close();
  return total;
}

/** The same for PostgreSQL, in batches of multi-row INSERTs inside one transaction. */
async function seedPostgres(url: string, target: number): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const count = Number((await client.query<{ count: string }>('SELECT COUNT(*) AS count FROM wg_peers')).rows[0]?.count);
    const next = Number((await client.query<{ next: number }>("SELECT next_index AS next FROM ip_pools WHERE profile_id = 'bench'")).rows[0]?.next);
    const { now, expires } = timestamps();
    const missing = target - count;
    await client.query('BEGIN');
    for (let start = 0; start < missing; start += SEED_BATCH) {
      const indexes = Array.from({ length: Math.min(SEED_BATCH, missing - start) }, (_, offset) => next + start + offset);
      const userIds = indexes.map((index) => `seed${index}`);
      await client.query(`INSERT INTO users (user_id, created_at, last_seen, auth_data) SELECT id, $2, $2, NULL FROM unnest($1::text[]) AS id`, [userIds, now]);
      const addresses = indexes.map((index) => clientAddressesAt(RANGE_FOUR, RANGE_SIX, index));
      await client.query(
        `INSERT INTO wg_peers (public_key, user_id, profile_id, node_number, display_name, ip_four, ip_six, pool_index, created_at, expires_at, auth_key)
         SELECT key, id, 'bench', 0, 'Seeded', four, six, index, $6, $7, NULL
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[]) AS seeded(key, id, four, six, index)`,
        [indexes.map(fakeKey), userIds, addresses.map((pair) => pair.ipFour), addresses.map((pair) => pair.ipSix), indexes, now, expires],
      );
    }
    await client.query("UPDATE ip_pools SET next_index = $1 WHERE profile_id = 'bench'", [next + missing]);
    await client.query('COMMIT');
    await client.query('ANALYZE');
    return Number((await client.query<{ total: string }>('SELECT COUNT(*) AS total FROM wg_peers')).rows[0]?.total);
  } finally {
    await client.end();
  }
}

/** A syntactically valid, unique WireGuard key for seeded rows. */
function fakeKey(index: number): string {
  const bytes = Buffer.alloc(32);
  bytes.writeUInt32BE(index, 0);
  bytes[31] = 0x40;
  return bytes.toString('base64');
}

function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmHWM:\s+(\d+) kB/.exec(status);
  return match === null ? Number.NaN : Math.round(Number(match[1]) / 1024);
}

function summarise(latencies: number[], seconds: number, errors: number): Figures {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (fraction: number) => round(sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN);
  return { count: latencies.length, perSecond: round(latencies.length / seconds), p50: at(0.5), p99: at(0.99), errors };
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

function printTable(all: typeof results): void {
  const machine = all.machine as { cpus: number; cpuModel: string; memoryGiB: number; node: string };
  console.log(`machine: ${machine.cpus} cores (${machine.cpuModel}), ${machine.memoryGiB} GiB, Node ${machine.node}`);
  console.log('| database | measurement | requests | per second | p50 ms | p99 ms | errors |');
  console.log('|---|---|---:|---:|---:|---:|---:|');
  for (const database of databases) {
    const figures = all[database];
    if (figures === undefined) continue;
    const rows: [string, Figures][] = [
      ['create (empty database)', figures.createEmptyDatabase],
      ['create (100k configurations)', figures.createAt100kConfigurations],
      ['connection_list?show_all=on (100k)', figures.connectionListShowAllAt100k],
      ['users (100k)', figures.usersAt100k],
    ];
    for (const [name, row] of rows) {
      console.log(`| ${database} | ${name} | ${row.count} | ${row.perSecond} | ${row.p50} | ${row.p99} | ${row.errors} |`);
    }
  }
  for (const database of databases) {
    const figures = all[database];
    if (figures !== undefined) console.log(`peak RSS of the portal on ${database}: ${figures.peakRssMb} MB`);
  }
}
