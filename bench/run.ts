// `npm run bench`: throughput and latency of the Admin API on this machine.
//  1. create: concurrency 16 for 20 s against an empty database;
//  2. the database is filled to 100,000 users and configurations;
//  3. create again for 5 s (allocation cost must not grow with the pool);
//  4. connection_list?show_all=on and users latency at 100,000 configurations;
//  5. peak RSS of the portal process.
// The portal runs as its own process (`vpn-portal serve`), built from dist/.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { clientAddressesAt } from '../src/wireguard/address-pool.js';

const CONCURRENCY = 16;
const CREATE_SECONDS = Number(process.env['BENCH_CREATE_SECONDS'] ?? 20);
const TARGET_CONFIGURATIONS = 100_000;
const LIST_SAMPLES = 20;
const RANGE_FOUR = '10.64.0.0/14';
const RANGE_SIX = 'fd64::/64';
const PORT = 18_080;

const root = path.resolve(import.meta.dirname, '..');
const work = mkdtempSync(path.join(tmpdir(), 'vpn-portal-bench-'));
const configPath = path.join(work, 'config.json');
writeFileSync(
  configPath,
  JSON.stringify({
    baseUrl: `http://127.0.0.1:${PORT}/vpn-user-portal/`,
    listen: { host: '127.0.0.1', port: PORT },
    dataDir: path.join(work, 'data'),
    logLevel: 'warn',
    ProfileList: [
      { profileId: 'bench', displayName: 'Bench', hostName: 'vpn.example.org', wRangeFour: RANGE_FOUR, wRangeSix: RANGE_SIX, nodeUrl: 'http://127.0.0.1:2' },
    ],
  }),
);
const cli = path.join(root, 'dist', 'cli', 'main.js');
execFileSync(process.execPath, [cli, 'generate-secrets', '--admin-api', '--config', configPath], { stdio: 'ignore' });
const secret = readFileSync(path.join(work, 'data', 'keys', 'admin-api.key'), 'utf8').trim();
const base = `http://127.0.0.1:${PORT}/vpn-user-portal/admin/api/v1`;
const auth = { authorization: `Bearer ${secret}` };

// Started through its shebang, with the same heap cap as `vpn-portal serve` in production.
const portal = spawn(cli, ['serve', '--config', configPath], { stdio: ['ignore', 'ignore', 'inherit'] });

interface Figures {
  count: number;
  perSecond: number;
  p50: number;
  p99: number;
  errors: number;
}

try {
  await waitForPortal();
  const createEmpty = await measureCreates(CREATE_SECONDS, 'u');
  const seeded = seedTo(TARGET_CONFIGURATIONS);
  const createFull = await measureCreates(5, 'late');
  const connectionList = await measureGets('/connection_list?show_all=on', LIST_SAMPLES);
  const users = await measureGets('/users', LIST_SAMPLES);
  const peakRssMb = peakRss(portal.pid ?? 0);

  const results = {
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version },
    database: 'sqlite',
    createEmptyDatabase: createEmpty,
    configurationsInDatabase: seeded,
    createAt100kConfigurations: createFull,
    connectionListShowAllAt100k: connectionList,
    usersAt100k: users,
    peakRssMb,
  };
  mkdirSync(path.join(root, 'bench'), { recursive: true });
  writeFileSync(path.join(root, 'bench', 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  printTable(results);
} finally {
  portal.kill('SIGTERM');
  await new Promise((resolve) => portal.once('exit', resolve));
  rmSync(work, { recursive: true, force: true });
}

async function waitForPortal(): Promise<void> {
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

async function measureCreates(seconds: number, prefix: string): Promise<Figures> {
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

async function measureGets(target: string, samples: number): Promise<Figures> {
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

/** Fills the database directly (fast) up to `target` configurations, one new user each. */
function seedTo(target: number): number {
  const db = new SqliteDatabase(path.join(work, 'data', 'db.sqlite'));
  db.pragma('busy_timeout = 10000');
  const { count } = db.prepare('SELECT COUNT(*) AS count FROM wg_peers').get() as { count: number };
  const { next } = db.prepare("SELECT next_index AS next FROM ip_pools WHERE profile_id = 'bench'").get() as { next: number };
  const now = new Date().toISOString().slice(0, 19) + '+00:00';
  const expires = new Date(Date.now() + 90 * 86_400_000).toISOString().slice(0, 19) + '+00:00';
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

function printTable(results: {
  machine: { cpus: number; cpuModel: string; memoryGiB: number; node: string };
  createEmptyDatabase: Figures;
  createAt100kConfigurations: Figures;
  connectionListShowAllAt100k: Figures;
  usersAt100k: Figures;
  peakRssMb: number;
}): void {
  const rows: [string, Figures][] = [
    ['create (empty database)', results.createEmptyDatabase],
    ['create (100k configurations)', results.createAt100kConfigurations],
    ['connection_list?show_all=on (100k)', results.connectionListShowAllAt100k],
    ['users (100k)', results.usersAt100k],
  ];
  console.log(`machine: ${results.machine.cpus} cores (${results.machine.cpuModel}), ${results.machine.memoryGiB} GiB, Node ${results.machine.node}`);
  console.log('| measurement | requests | per second | p50 ms | p99 ms | errors |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const [name, figures] of rows) {
    console.log(`| ${name} | ${figures.count} | ${figures.perSecond} | ${figures.p50} | ${figures.p99} | ${figures.errors} |`);
  }
  console.log(`peak RSS of the portal: ${results.peakRssMb} MB`);
}
