// The node agent's benchmark (part of `npm run bench`; needs root and wireguard-go): a real
// agent process with a real wireguard-go interface in a network namespace, and a real portal
// holding a /16's clients for it (65,533 configurations, wireguard-go's cap), per database.
//  1. 65,533 adds, sent as the portal's reconcile pass sends them (its daemon client: add_peers
//     requests of 128 peers, as many in flight as the pass keeps): seconds until every request
//     answered (one answers once its peers are on the interface), and how many writes to the interface the agent made
//     (set operations on wireguard-go's control socket plus `wg set` processes, from its metrics);
//  2. a full reconcile pass of the portal with nothing to change, which observes the node's
//     sessions on the way: seconds, writes (must be none), and the agent's CPU time for it;
//  3. the agent's memory with every peer on the interface;
//  4. the agent stopped (it removes the interface it made) and started again: seconds from its
//     start until every peer is back on the interface (the portal gives them back);
//  5. bulk revocation: 10,000 disable_user calls at concurrency 16 through the Admin API, from a
//     process of their own: the calls' latency, and seconds from the last answer until every
//     peer of those users is off the interface.
// BENCH_AGENT_ONLY=revocation runs the adds (the interface must be full) and the revocation only,
// skipping 2–4; BENCH_DISABLE_CALLS=N sends N disable_user calls instead of 10,000.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { PARALLEL_CHANGES_PER_NODE } from '../src/core/reconcile/pass.js';
import { asNodeNumber, type asWireGuardKey } from '../src/shared/ids.js';
import { advanceRevisionTo, toRevision } from '../src/storage/revisions.js';
import { connectDatabase } from '../src/storage/database.js';
import { clientAddressesAt } from '../src/wireguard/address-pool.js';
import { generateWireGuardKeyPair } from '../src/wireguard/keys.js';
import type { AgentProcessInput, AgentProcessReady } from './agent-process.js';
import type { SenderInput } from './agent-sender.js';
import type { DisableSenderInput, DisableSenderOutput } from './disable-sender.js';
import { memoryMb, processCpuSeconds } from './process-figures.js';
import { freePort } from '../test/support/free-port.js';
import { NetnsLab, type Namespace } from '../test/support/netns.js';
import { startTestPortal, type TestPortal } from '../test/support/test-portal.js';

export interface AgentFigures {
  readonly database: 'sqlite' | 'postgres';
  readonly peers: number;
  readonly addSeconds: number;
  readonly writesDuringAdd: number;
  /** Steps 2–4; null when skipped (BENCH_AGENT_ONLY=revocation). */
  readonly passAndRestart: PassAndRestartFigures | null;
  readonly revocation: RevocationFigures;
  /** `uptime`'s load averages when the run began and ended. */
  readonly loadBefore: string;
  readonly loadAfter: string;
}

export interface PassAndRestartFigures {
  readonly noOpReconcileSeconds: number;
  readonly writesDuringReconcile: number;
  /** The agent process's CPU time (user + system) during the full pass, and its `wg` processes'. */
  readonly fullPassAgentCpuSeconds: number;
  readonly fullPassWgCpuSeconds: number;
  readonly agentRssMb: number;
  readonly agentPeakRssMb: number;
  /** From the restarted agent's start until every peer is on the interface again. */
  readonly restartSeconds: number;
}

export interface RevocationFigures {
  /** disable_user calls of the warm-up before the measured ones (their peers are gone from the node too). */
  readonly warmUpCalls: number;
  readonly calls: number;
  readonly errors: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly callsSeconds: number;
  /** CPU time (user + system) per call of the portal (the benchmark's own process) and of the agent, while the calls ran. */
  readonly portalCpuPerCallUs: number;
  readonly agentCpuPerCallUs: number;
  /** From the last answer until no peer of those users is on the interface (0: gone before it). */
  readonly offNodeSeconds: number;
}

/** A /16's clients: 65,536 addresses less the network, the node's own and the broadcast address. */
const PEERS = 65_533;
const DISABLED_USERS = Number(process.env['BENCH_DISABLE_CALLS'] ?? 10_000);
const REVOCATION_ONLY = process.env['BENCH_AGENT_ONLY'] === 'revocation';
const DISABLE_CONCURRENCY = 16;
/** The creates' warm-up, for the same reason. */
const DISABLE_WARM_UP_SECONDS = 3;
/** As many in flight as the portal's reconcile pass keeps. */
const IN_FLIGHT = PARALLEL_CHANGES_PER_NODE;
const RANGE_FOUR = '10.96.0.0/16';
const RANGE_SIX = 'fd96::/64';
const SEED_ROWS_PER_STATEMENT = 500;

export async function benchAgent(database: 'sqlite' | 'postgres'): Promise<AgentFigures | { notMeasured: string }> {
  if (process.getuid?.() !== 0) return { notMeasured: 'needs root (network namespaces, wireguard-go)' };
  try {
    execFileSync('wireguard-go', ['--version'], { stdio: 'ignore' });
  } catch {
    return { notMeasured: 'wireguard-go is not installed' };
  }
  const loadBefore = loadAverage();
  const lab = new NetnsLab();
  let portal: TestPortal | undefined;
  let agent: AgentProcess | undefined;
  const postgresServer = process.env['TEST_POSTGRES_URL'];
  if (database === 'postgres' && (postgresServer === undefined || postgresServer === ''))
    return { notMeasured: 'no PostgreSQL server (TEST_POSTGRES_URL)' };
  const previousDatabaseUrl = process.env['TEST_DATABASE_URL'];
  try {
    const node = await lab.namespace('node');
    const interfaceName = lab.interfaceName('wgb');
    const port = await freePort();
    // startTestPortal makes a fresh database on this server (dropped on close).
    if (database === 'postgres') process.env['TEST_DATABASE_URL'] = postgresServer;
    portal = await startTestPortal({
      ...(database === 'sqlite' ? { database: 'sqlite' } : {}),
      config: {
        reconcileInterval: 'PT1H',
        ProfileList: [
          {
            profileId: 'bench',
            displayName: 'Bench',
            hostName: 'vpn.example.org',
            wRangeFour: RANGE_FOUR,
            wRangeSix: RANGE_SIX,
            nodeUrl: `http://127.0.0.1:${port}`,
          },
        ],
      },
    });
    const nodeNumber = asNodeNumber(0);
    const keys = portal.portal.ctx.keys;
    const agentInput: AgentProcessInput = {
      namespace: node.name,
      config: {
        metrics: { listen: '127.0.0.1:0' },
        apiUrl: portal.nodeApiUrl,
        nodeKeyFile: keys.nodeKeyPath(nodeNumber),
        listen: { host: '127.0.0.1', port },
        WireGuard: { interfaceName, endpointFile: join(portal.dataDir, 'endpoints.json') },
      },
    };
    agent = await startAgentProcess(agentInput);
    // The agent's start sets off passes of the portal over this node (on an empty database):
    // they must be over before the database holds anything they would push.
    await passesSettled(portal, nodeNumber);
    const peers = await seedConfigurations(portal);

    // 1. 65,533 adds, from a process of their own.
    const writesBeforeAdd = await peerWrites(agent);
    const input: SenderInput = {
      url: `http://127.0.0.1:${port}`,
      secret: keys.nodeSecret(nodeNumber) ?? '',
      inFlight: IN_FLIGHT,
      peers,
    };
    // Every add answers once its peers are on the interface: the sender's time is the agent's.
    const { seconds: addSeconds } = JSON.parse(await runBenchProcess('agent-sender.ts', input)) as { seconds: number };
    const onInterface = await peersOnInterface(node, interfaceName);
    if (onInterface.size !== PEERS) throw new Error(`${onInterface.size} peers on the interface after ${PEERS} adds`);
    const writesBeforeReconcile = await peerWrites(agent);
    const writesDuringAdd = writesBeforeReconcile - writesBeforeAdd;
    progress(`${PEERS} adds in ${round(addSeconds)} s, ${writesDuringAdd} writes`);

    const daemonUrl = `http://127.0.0.1:${port}`;
    const nodeSecret = keys.nodeSecret(nodeNumber) ?? '';
    let passAndRestart: PassAndRestartFigures | null = null;
    if (!REVOCATION_ONLY) {
      const measured = await measurePassAndRestart({
        portal,
        agent,
        agentInput,
        node,
        interfaceName,
        daemonUrl,
        nodeSecret,
        peers,
        writesBeforeReconcile,
      });
      agent = measured.agent;
      passAndRestart = measured.figures;
    }

    // 5. Bulk revocation: the first 10,000 users (BENCH_DISABLE_CALLS) disabled, one call each,
    // after a warm-up on users from the other end (as the creates', so a cold process's first
    // seconds do not count); the clocks start when the sender says it is warm.
    const disabledKeys = peers.slice(0, DISABLED_USERS).map((peer) => peer.publicKey as string);
    const disableInput: DisableSenderInput = {
      adminBase: portal.adminBase,
      secret: portal.secret,
      concurrency: DISABLE_CONCURRENCY,
      warmUpUserIds: peers
        .slice(DISABLED_USERS)
        .reverse()
        .map((peer) => peer.userId),
      warmUpSeconds: DISABLE_WARM_UP_SECONDS,
      userIds: peers.slice(0, DISABLED_USERS).map((peer) => peer.userId),
    };
    let portalCpuBefore = process.cpuUsage();
    let agentCpuBefore = processCpuSeconds(agent.pid).own;
    const agentPid = agent.pid;
    const senderOutput = await runBenchProcess('disable-sender.ts', disableInput, (line) => {
      if (!line.startsWith('warmed ')) return; // the sender's line between warm-up and measured calls
      portalCpuBefore = process.cpuUsage();
      agentCpuBefore = processCpuSeconds(agentPid).own;
    });
    const calls = JSON.parse(senderOutput.trim().split('\n').at(-1) ?? '') as DisableSenderOutput;
    const portalCpu = process.cpuUsage(portalCpuBefore);
    const agentCpuSeconds = processCpuSeconds(agent.pid).own - agentCpuBefore;
    // The agent's count first (as above), then the interface itself, until none of those keys is there.
    while ((await agentPeerCount(daemonUrl, nodeSecret)) > PEERS - DISABLED_USERS - calls.warmUpCalls) {
      if (Date.now() - calls.lastAnswerAtMs > 60_000) break;
      await sleep(50);
    }
    for (;;) {
      const present = await peersOnInterface(node, interfaceName);
      const remaining = disabledKeys.filter((key) => present.has(key)).length;
      if (remaining === 0) break;
      if (Date.now() - calls.lastAnswerAtMs > 60_000)
        throw new Error(`${remaining} disabled users' peers still on the interface a minute after the last answer`);
      await sleep(1000);
    }
    const offNodeSeconds = Math.max(0, (Date.now() - calls.lastAnswerAtMs) / 1000);
    const revocation: RevocationFigures = {
      warmUpCalls: calls.warmUpCalls,
      calls: calls.calls,
      errors: calls.errors,
      p50Ms: calls.p50Ms,
      p99Ms: calls.p99Ms,
      maxMs: calls.maxMs,
      callsSeconds: round(calls.seconds),
      portalCpuPerCallUs: Math.round((portalCpu.user + portalCpu.system) / calls.calls),
      agentCpuPerCallUs: Math.round((agentCpuSeconds * 1e6) / calls.calls),
      offNodeSeconds: round(offNodeSeconds),
    };
    progress(
      `${revocation.warmUpCalls} disable_user to warm up, then ${revocation.calls} disable_user in ${revocation.callsSeconds} s, p50 ${revocation.p50Ms} / p99 ${revocation.p99Ms} / max ${revocation.maxMs} ms, CPU per call: portal ${revocation.portalCpuPerCallUs} µs, agent ${revocation.agentCpuPerCallUs} µs; off the node ${revocation.offNodeSeconds} s after the last answer`,
    );
    return {
      database,
      peers: PEERS,
      addSeconds: round(addSeconds),
      writesDuringAdd,
      passAndRestart,
      revocation,
      loadBefore,
      loadAfter: loadAverage(),
    };
  } finally {
    await agent?.stop();
    await portal?.close();
    await lab.cleanup();
    if (previousDatabaseUrl === undefined) delete process.env['TEST_DATABASE_URL'];
    else process.env['TEST_DATABASE_URL'] = previousDatabaseUrl;
  }
}

/** Steps 2–4: a full pass with nothing to change, the agent's memory, the agent restarted (answers the new one). */
async function measurePassAndRestart(setting: {
  readonly portal: TestPortal;
  readonly agent: AgentProcess;
  readonly agentInput: AgentProcessInput;
  readonly node: Namespace;
  readonly interfaceName: string;
  readonly daemonUrl: string;
  readonly nodeSecret: string;
  readonly peers: readonly SeededPeer[];
  readonly writesBeforeReconcile: number;
}): Promise<{ agent: AgentProcess; figures: PassAndRestartFigures }> {
  const { portal, agentInput, node, interfaceName, daemonUrl, nodeSecret, peers, writesBeforeReconcile } = setting;
  let agent = setting.agent;
  // 2. A full pass with nothing to change; it observes the node's sessions on the way.
  const cpuBefore = processCpuSeconds(agent.pid);
  const reconcileStarted = performance.now();
  await portal.portal.reconcileNow();
  const noOpReconcileSeconds = (performance.now() - reconcileStarted) / 1000;
  const cpuAfter = processCpuSeconds(agent.pid);
  const writesDuringReconcile = (await peerWrites(agent)) - writesBeforeReconcile;
  progress(
    `full pass ${round(noOpReconcileSeconds)} s, ${writesDuringReconcile} writes, agent CPU ${round(cpuAfter.own - cpuBefore.own)} s`,
  );

  // 3. The agent's memory with every peer on the interface.
  const { rssMb: agentRssMb, peakMb: agentPeakRssMb } = memoryMb(agent.pid);
  progress(`agent RSS ${agentRssMb} MB (peak ${agentPeakRssMb} MB)`);

  // 4. Stopped (the interface goes with it) and started again.
  await agent.stop();
  const restartStarted = performance.now();
  agent = await startAgentProcess(agentInput);
  // Watched through the agent's own count (/i/node, no read of the interface): a look at the
  // interface is a listing of every peer that wireguard-go writes out under its configuration
  // lock, and looking often would hold up the very writes measured. Checked on the interface once.
  while ((await agentPeerCount(daemonUrl, nodeSecret)) < PEERS) await sleep(100);
  const restartSeconds = (performance.now() - restartStarted) / 1000;
  const restored = await peersOnInterface(node, interfaceName);
  if (peers.some((peer) => !restored.has(peer.publicKey)))
    throw new Error(`${PEERS - restored.size} peers missing on the interface after the restart`);
  progress(`restarted, every peer back in ${round(restartSeconds)} s`);
  return {
    agent,
    figures: {
      noOpReconcileSeconds: round(noOpReconcileSeconds),
      writesDuringReconcile,
      fullPassAgentCpuSeconds: round(cpuAfter.own - cpuBefore.own),
      fullPassWgCpuSeconds: round(cpuAfter.children - cpuBefore.children),
      agentRssMb,
      agentPeakRssMb,
      restartSeconds: round(restartSeconds),
    },
  };
}

interface AgentProcess {
  readonly pid: number;
  readonly metricsUrl: string;
  stop(): Promise<void>;
}

/** Starts bench/agent-process.ts and waits until it serves. BENCH_PROFILE=DIR: it writes a CPU profile there. */
async function startAgentProcess(input: AgentProcessInput): Promise<AgentProcess> {
  const profileDir = process.env['BENCH_PROFILE'];
  const profile = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`];
  const child = spawn(
    process.execPath,
    [...profile, '--import', 'tsx', fileURLToPath(new URL('./agent-process.ts', import.meta.url))],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  child.stdin.end(JSON.stringify(input));
  const lines = createInterface({ input: child.stdout });
  const exited = once(child, 'exit');
  const first = await Promise.race([
    once(lines, 'line') as Promise<[string]>,
    exited.then(([code]) => Promise.reject(new Error(`the agent exited with ${String(code)}`))),
  ]);
  const ready = JSON.parse(first[0]) as AgentProcessReady;
  if (ready.metricsUrl === null) throw new Error('the agent serves no metrics');
  const metricsUrl = ready.metricsUrl;
  return { pid: child.pid ?? 0, metricsUrl, stop: () => stopProcess(child) };
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** Runs one of the benchmark's helper processes with `input` on stdin; answers what it printed, telling `onLine` each line as it comes. */
async function runBenchProcess(script: string, input: unknown, onLine?: (line: string) => void): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL(`./${script}`, import.meta.url))], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  child.stdin.end(JSON.stringify(input));
  const lines: string[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    onLine?.(line);
  });
  // 'close', not 'exit': every line has been read by then.
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`${script} exited with ${String(code)}`);
  return lines.join('\n');
}

/** The public keys on the interface (`wg show IF peers`, the lightest listing). */
async function peersOnInterface(node: Namespace, interfaceName: string): Promise<Set<string>> {
  const { stdout } = await node.exec('wg', ['show', interfaceName, 'peers']);
  return new Set(stdout.split('\n').filter(Boolean));
}

/** The peers on the interface as the agent counts them (`w_peer_count` of /i/node). */
async function agentPeerCount(daemonUrl: string, secret: string): Promise<number> {
  try {
    const response = await fetch(`${daemonUrl}/i/node`, { headers: { authorization: `Bearer ${secret}` } });
    if (!response.ok) return 0;
    return ((await response.json()) as { w_peer_count?: number }).w_peer_count ?? 0;
  } catch {
    return 0; // not serving yet
  }
}

/** Writes of peer changes to the interface so far, by any method (the agent's own counter). */
async function peerWrites(agent: AgentProcess): Promise<number> {
  const metrics = await (await fetch(agent.metricsUrl)).text();
  return metrics
    .split('\n')
    .filter((line) => line.startsWith('vpn_node_wireguard_peer_writes_total{'))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/** Resolves once a pass over the node finished and none followed for two seconds. */
async function passesSettled(portal: TestPortal, nodeNumber: ReturnType<typeof asNodeNumber>): Promise<void> {
  let last = 0;
  portal.portal.ctx.events.afterCommit((event) => {
    if (event.type === 'reconcile.finished' && event.nodeNumber === nodeNumber && event.reachable)
      last = performance.now();
  });
  await portal.portal.reconcileNow();
  for (;;) {
    await sleep(250);
    if (last > 0 && performance.now() - last > 2000) return;
  }
}

interface SeededPeer {
  readonly userId: string;
  readonly publicKey: ReturnType<typeof asWireGuardKey>;
  readonly ipFour: string;
  readonly ipSix: string;
}

/** One user with one configuration per client address, written into the portal's database. */
async function seedConfigurations(portal: TestPortal): Promise<SeededPeer[]> {
  const location = portal.database.startsWith('sqlite:')
    ? ({ dialect: 'sqlite', path: portal.database.slice('sqlite:'.length) } as const)
    : ({ dialect: 'postgres', url: portal.database } as const);
  const db = connectDatabase(location);
  const now = `${new Date().toISOString().slice(0, 19)}+00:00`;
  // 90 days, as sessionExpiry's default: a day (as before) lay inside the expiry warning's
  // week, so the "no-op" pass also announced 65,533 configuration.expiring events (2.2 s).
  const expires = `${new Date(Date.now() + 90 * 86_400_000).toISOString().slice(0, 19)}+00:00`;
  const peers: SeededPeer[] = Array.from({ length: PEERS }, (_, index) => ({
    userId: `agent${index}`,
    publicKey: generateWireGuardKeyPair().publicKey,
    ...clientAddressesAt(RANGE_FOUR, RANGE_SIX, index),
  }));
  try {
    await db.transaction().execute(async (trx) => {
      for (let start = 0; start < PEERS; start += SEED_ROWS_PER_STATEMENT) {
        const chunk = peers.slice(start, start + SEED_ROWS_PER_STATEMENT);
        await trx
          .insertInto('users')
          .values(chunk.map((peer) => ({ user_id: peer.userId, created_at: now, last_seen: now, auth_data: null })))
          .execute();
        await trx
          .insertInto('wg_peers')
          .values(
            chunk.map((peer, offset) => ({
              public_key: peer.publicKey,
              user_id: peer.userId,
              profile_id: 'bench',
              node_number: 0,
              display_name: 'Bench',
              ip_four: peer.ipFour,
              ip_six: peer.ipSix,
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
      await trx.updateTable('ip_pools').set({ next_index: PEERS }).where('profile_id', '=', 'bench').execute();
      // The rows carry revision 1, so the counter has reached it, as the creates would have moved
      // it: else a pass finds the node (revision 1) ahead of the database, takes it for a restored
      // backup and stamps every row (1.8 s of the PostgreSQL "no-op" pass, whose counter starts at 0).
      await advanceRevisionTo(trx, toRevision(1));
    });
  } finally {
    await db.destroy();
  }
  return peers;
}

/** Each figure as it is measured, with the load: a later step that fails does not lose it. */
function progress(what: string): void {
  console.error(`  agent bench: ${what} (load ${loadAverage()})`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
