// `BENCH_ONLY=listings npm run bench`: whether the portal, under its 192 MB heap cap, lives
// through reconcile passes over several full wireguard-go nodes (65,533 peers each, some 15 MB of
// listing apiece). `vpn-portal serve` (dist/, through its shebang's cap, with --trace-gc for the
// heap's peak) on SQLite holding every node's configurations, and stand-in nodes that list
// exactly those peers as our agent lists a busy node (bench/listing-heap-nodes.ts, a process of
// its own): the start-up full pass and the next one must reach every node. Prints whether the
// portal lived, the heap's peak before a collection (its most in use), the peak RSS and the
// passes' times; a portal that died prints its last words. BENCH_LISTING_NODES=N sets the nodes
// (default 6); BENCH_LISTING_CLI names another build to run than dist/cli/main.js (a branch's own);
// BENCH_LISTING_LOG=FILE keeps the portal's output there; BENCH_LISTING_DEADLINE_S sets how long
// the passes may take (150 s; longer on a loaded machine). Once the first node was reconciled, and
// until the next pass reached every node (or the deadline), BENCH_LISTING_CALLS (default 4) `connection_list` and as
// many `connected_users` calls (show_all=off: every node's peer list is read) are sent at once, a
// round after another (0: none, the passes alone).
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { advanceRevisionTo, toRevision } from '../src/storage/revisions.js';
import { connectDatabase, migrateToLatest } from '../src/storage/database.js';
import { clientAddressesAt } from '../src/wireguard/address-pool.js';
import type { ListingHeapPeers } from './listing-heap-nodes.js';
import { peakRssMb, round, stopProcess } from './process-figures.js';

const NODES = Number(process.env['BENCH_LISTING_NODES'] ?? 6);
const CALLS = Number(process.env['BENCH_LISTING_CALLS'] ?? 4);
/** A /16's clients, as many as wireguard-go holds. */
const PEERS = 65_533;
const INTERVAL_S = 30;
const FIRST_NODE_PORT = 47_300;
const PORTAL_PORT = 47_290;
const METRICS_PORT = 47_291;
const API = `http://127.0.0.1:${PORTAL_PORT}/vpn-user-portal/admin/api/v1`;
/** The start-up pass and the next, with room for a slow machine. */
const DEADLINE_MS = Number(process.env['BENCH_LISTING_DEADLINE_S'] ?? 3 * INTERVAL_S + 60) * 1000;
const ROWS_PER_STATEMENT = 500;

const root = path.resolve(import.meta.dirname, '..');
const cli = process.env['BENCH_LISTING_CLI'] ?? path.join(root, 'dist', 'cli', 'main.js');
const rangeFour = (node: number) => `10.${100 + node}.0.0/16`;
const rangeSix = (node: number) => `fd6e:${(node + 1).toString(16)}::/64`;

/** Every node's configurations written into a fresh database: one user each, as creates would leave them. */
async function seed(file: string): Promise<ListingHeapPeers> {
  const db = connectDatabase({ dialect: 'sqlite', path: file });
  const now = `${new Date().toISOString().slice(0, 19)}+00:00`;
  const expires = `${new Date(Date.now() + 90 * 86_400_000).toISOString().slice(0, 19)}+00:00`;
  const peers: [string, string, string][][] = [];
  try {
    await migrateToLatest(db);
    for (let node = 0; node < NODES; node++) {
      const ofNode: [string, string, string][] = Array.from({ length: PEERS }, (_, index) => {
        const { ipFour, ipSix } = clientAddressesAt(rangeFour(node), rangeSix(node), index);
        return [randomBytes(32).toString('base64'), ipFour, ipSix];
      });
      peers.push(ofNode);
      await db.transaction().execute(async (trx) => {
        for (let start = 0; start < PEERS; start += ROWS_PER_STATEMENT) {
          const chunk = ofNode.slice(start, start + ROWS_PER_STATEMENT);
          const userOf = (offset: number) => `n${node}u${start + offset}`;
          await trx
            .insertInto('users')
            .values(
              chunk.map((_, offset) => ({ user_id: userOf(offset), created_at: now, last_seen: now, auth_data: null })),
            )
            .execute();
          await trx
            .insertInto('wg_peers')
            .values(
              chunk.map(([publicKey, ipFour, ipSix], offset) => ({
                public_key: publicKey,
                user_id: userOf(offset),
                profile_id: `n${node}`,
                node_number: node,
                display_name: 'Bench',
                ip_four: ipFour,
                ip_six: ipSix,
                pool_index: start + offset,
                created_at: now,
                expires_at: expires,
                auth_key: null,
                revision: 1,
                expiry_warned: 0,
              })),
            )
            .execute();
        }
        await advanceRevisionTo(trx, toRevision(1));
      });
    }
  } finally {
    await db.destroy();
  }
  return peers;
}

/** Each node's last successful pass (Unix seconds), from the portal's metrics; empty while they do not answer. */
async function lastPasses(): Promise<Map<string, number>> {
  const passes = new Map<string, number>();
  try {
    const text = await (await fetch(`http://127.0.0.1:${METRICS_PORT}/metrics`)).text();
    for (const match of text.matchAll(
      /^vpn_portal_node_last_reconcile_success_timestamp_seconds\{node="(\d+)"\} (\S+)$/gm,
    ))
      passes.set(match[1] ?? '', Number(match[2]));
  } catch {
    // Not serving (yet, or any more).
  }
  return passes;
}

/** The most heap in use the collector saw before a collection, from --trace-gc lines ("… 171.2 (190.3) -> …"). */
function heapPeakMb(log: string): number {
  let peak = 0;
  for (const match of log.matchAll(/(?:Scavenge|Mark-Compact|Mark-sweep)[^\d]*([\d.]+) \([\d.]+\) ->/g))
    peak = Math.max(peak, Number(match[1]));
  return peak;
}

/** Rounds of `connection_list` and `connected_users` calls, CALLS of each at once, until stopped. */
class AdminCalls {
  #running: Promise<void> | null = null;
  #stopped = false;
  readonly #latencies: number[] = [];
  #failed = 0;

  constructor(private readonly secret: string) {}

  /** Starts the rounds, once. */
  start(): void {
    if (CALLS > 0 && this.#running === null) this.#running = this.#rounds();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }

  summary(): string {
    if (CALLS === 0) return 'no Admin API calls';
    const sorted = [...this.#latencies].sort((a, b) => a - b);
    const at = (share: number) =>
      round((sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))] ?? 0) / 1000);
    return `${this.#latencies.length} connection_list/connected_users calls answered (${CALLS} of each at once), ${this.#failed} failed; p50 ${at(0.5)} s, max ${at(1)} s`;
  }

  async #rounds(): Promise<void> {
    while (!this.#stopped) {
      const one = async (call: string) => {
        const sent = Date.now();
        try {
          const response = await fetch(`${API}/${call}?show_all=off`, {
            headers: { authorization: `Bearer ${this.secret}` },
          });
          await response.arrayBuffer();
          if (response.status === 200) this.#latencies.push(Date.now() - sent);
          else this.#failed++;
        } catch {
          this.#failed++;
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      };
      await Promise.all(Array.from({ length: CALLS }, () => [one('connection_list'), one('connected_users')]).flat());
    }
  }
}

async function main(): Promise<void> {
  const work = mkdtempSync(path.join(tmpdir(), 'vpn-portal-listing-heap-'));
  const configPath = path.join(work, 'config.json');
  const database = path.join(work, 'data', 'db.sqlite');
  writeFileSync(
    configPath,
    JSON.stringify({
      baseUrl: `http://127.0.0.1:${PORTAL_PORT}/vpn-user-portal/`,
      listen: { host: '127.0.0.1', port: PORTAL_PORT },
      metrics: { listen: `127.0.0.1:${METRICS_PORT}` },
      dataDir: path.join(work, 'data'),
      database: `sqlite:${database}`,
      logLevel: 'warn',
      reconcileInterval: `PT${INTERVAL_S}S`,
      ProfileList: Array.from({ length: NODES }, (_, node) => ({
        profileId: `n${node}`,
        displayName: `Node ${node}`,
        hostName: `vpn${node}.example.org`,
        wRangeFour: rangeFour(node),
        wRangeSix: rangeSix(node),
        nodeUrl: `http://127.0.0.1:${FIRST_NODE_PORT + node}`,
        onNode: [node],
      })),
    }),
  );
  execFileSync(process.execPath, [cli, 'generate-secrets', '--admin-api', '--config', configPath], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const secret = readFileSync(path.join(work, 'data', 'keys', 'admin-api.key'), 'utf8').trim();
  const peers = await seed(database);
  const peersFile = path.join(work, 'peers.json');
  writeFileSync(peersFile, JSON.stringify(peers));
  const nodes = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(root, 'bench', 'listing-heap-nodes.ts'), String(FIRST_NODE_PORT), peersFile],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await once(nodes.stdout, 'data');
  const logFile = path.join(work, 'portal.log');
  const load = loadavg()
    .map((value) => value.toFixed(1))
    .join(' ');
  // The cap of the shebang (src/cli/main.ts), spelt out so that --trace-gc can go beside it.
  const portal = spawn(
    process.execPath,
    ['--max-old-space-size=192', '--trace-gc', cli, 'serve', '--config', configPath],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  portal.stdout.on('data', (chunk: Buffer) => {
    log += chunk.toString();
  });
  portal.stderr.on('data', (chunk: Buffer) => {
    log += chunk.toString();
  });
  const started = Date.now();
  let peakRss = 0;
  let firstPassS: number | null = null;
  let secondPassS: number | null = null;
  const calls = new AdminCalls(secret);
  try {
    while (Date.now() - started < DEADLINE_MS && portal.exitCode === null && portal.signalCode === null) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      try {
        peakRss = Math.max(peakRss, peakRssMb(portal.pid ?? 0));
      } catch {
        // It just exited.
      }
      const passes = await lastPasses();
      if (passes.size > 0) calls.start();
      if (passes.size < NODES) continue;
      const oldest = Math.min(...passes.values()) * 1000;
      firstPassS ??= (Date.now() - started) / 1000;
      if (oldest >= started + INTERVAL_S * 1000) {
        secondPassS = (Date.now() - started) / 1000;
        break;
      }
    }
    await calls.stop();
    const lived = portal.exitCode === null && portal.signalCode === null;
    writeFileSync(process.env['BENCH_LISTING_LOG'] ?? logFile, log);
    // Its fatal error, or its last errors (pino's level 50).
    const lastWords = log
      .split('\n')
      .filter((line) => /FATAL ERROR|"level":50/.test(line))
      .slice(-3);
    console.log(
      [
        `listings: ${NODES} stand-in nodes of ${PEERS} peers (${round(Buffer.byteLength(JSON.stringify(peers[0])) / 1048576)} MiB of keys and addresses per node), portal ${path.relative(root, cli)} at --max-old-space-size=192 (load ${load})`,
        `  portal ${lived ? 'lived' : `DIED (exit ${portal.exitCode ?? portal.signalCode})`}; heap peak before a collection ${round(heapPeakMb(log))} MB; peak RSS ${peakRss} MB`,
        `  every node reconciled at start after ${firstPassS ?? 'never'} s; by the next pass after ${secondPassS ?? 'never'} s`,
        `  meanwhile ${calls.summary()}`,
        ...lastWords.map((line) => `  portal: ${line.slice(0, 200)}`),
      ].join('\n'),
    );
    if (!lived || secondPassS === null) process.exitCode = 1;
  } finally {
    await stopProcess(portal);
    await stopProcess(nodes);
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
