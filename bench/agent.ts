// The node agent's benchmark (part of `npm run bench`; needs root and wireguard-go): a real
// agent with a real wireguard-go interface in a network namespace, and a real portal (SQLite)
// holding 10,000 configurations for it.
//  1. 10,000 add_peer calls, sent as the portal's reconcile pass sends them (its daemon client,
//     as many in flight as the pass keeps): seconds until every call answered (an add answers
//     once its peer is on the interface), and how many writes to the interface the agent made
//     (set operations on wireguard-go's control socket plus `wg set` processes, from its metrics);
//  2. a reconcile pass of the portal over those 10,000 peers, with nothing to change: seconds,
//     and writes to the interface (must be none).
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { text } from 'node:stream/consumers';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { pino } from 'pino';
import { startNodeAgent, type RunningNodeAgent } from '../src/agent/agent.js';
import { parseNodeAgentConfig } from '../src/agent/config.js';
import { readNodeKey } from '../src/agent/node-key.js';
import { PARALLEL_CHANGES_PER_NODE } from '../src/core/reconcile/pass.js';
import { asNodeNumber, type asWireGuardKey } from '../src/shared/ids.js';
import { connectDatabase } from '../src/storage/database.js';
import { clientAddressesAt } from '../src/wireguard/address-pool.js';
import { generateWireGuardKeyPair } from '../src/wireguard/keys.js';
import type { SenderInput } from './agent-sender.js';
import { freePort } from '../test/support/free-port.js';
import { NetnsLab, wireGuardPeers } from '../test/support/netns.js';
import { startTestPortal, type TestPortal } from '../test/support/test-portal.js';

export interface AgentFigures {
  readonly peers: number;
  readonly addSeconds: number;
  readonly writesDuringAdd: number;
  readonly noOpReconcileSeconds: number;
  readonly writesDuringReconcile: number;
}

const PEERS = 10_000;
/** As many in flight as the portal's reconcile pass keeps. */
const IN_FLIGHT = PARALLEL_CHANGES_PER_NODE;
const RANGE_FOUR = '10.96.0.0/16';
const RANGE_SIX = 'fd96::/64';

export async function benchAgent(): Promise<AgentFigures | { notMeasured: string }> {
  if (process.getuid?.() !== 0) return { notMeasured: 'needs root (network namespaces, wireguard-go)' };
  try {
    execFileSync('wireguard-go', ['--version'], { stdio: 'ignore' });
  } catch {
    return { notMeasured: 'wireguard-go is not installed' };
  }
  const lab = new NetnsLab();
  let portal: TestPortal | undefined;
  let agent: RunningNodeAgent | undefined;
  try {
    const node = await lab.namespace('node');
    const interfaceName = lab.interfaceName('wgb');
    const port = await freePort();
    portal = await startTestPortal({
      database: 'sqlite',
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
    const config = parseNodeAgentConfig(
      {
        metrics: { listen: '127.0.0.1:0' },
        apiUrl: portal.nodeApiUrl,
        nodeKeyFile: portal.portal.ctx.keys.nodeKeyPath(nodeNumber),
        listen: { host: '127.0.0.1', port },
        WireGuard: { interfaceName, endpointFile: join(portal.dataDir, 'endpoints.json') },
      },
      'node.json',
    );
    agent = await startNodeAgent({
      config,
      nodeKey: (await readNodeKey(config.nodeKeyFile)).key,
      logger: pino({ level: 'warn' }),
      version: 'bench',
      runner: node.runner(),
    });
    const keys = portal.portal.ctx.keys;
    // The agent's start sets off passes of the portal over this node (on an empty database):
    // they must be over before the database holds anything they would push.
    await passesSettled(portal, nodeNumber);
    const peers = await seedConfigurations(portal);

    // 1. 10,000 add_peer calls, from a process of their own.
    const writesBeforeAdd = await peerWrites(agent);
    const input: SenderInput = { url: `http://127.0.0.1:${port}`, secret: keys.nodeSecret(nodeNumber) ?? '', inFlight: IN_FLIGHT, peers };
    const sender = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./agent-sender.ts', import.meta.url))], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    sender.stdin.end(JSON.stringify(input));
    const output = text(sender.stdout);
    const [code] = (await once(sender, 'exit')) as [number | null];
    if (code !== 0) throw new Error(`the add_peer sender exited with ${String(code)}`);
    // Every add_peer answers once its peer is on the interface: the sender's time is the agent's.
    const { seconds: addSeconds } = JSON.parse(await output) as { seconds: number };
    const onInterface = (await wireGuardPeers(node, interfaceName)).size;
    if (onInterface !== PEERS) throw new Error(`${onInterface} peers on the interface after ${PEERS} add_peer calls`);
    const writesBeforeReconcile = await peerWrites(agent);
    const writesDuringAdd = writesBeforeReconcile - writesBeforeAdd;

    // 2. A reconcile pass with nothing to change.
    const reconcileStarted = performance.now();
    await portal.portal.reconcileNow();
    const noOpReconcileSeconds = (performance.now() - reconcileStarted) / 1000;
    const writesDuringReconcile = (await peerWrites(agent)) - writesBeforeReconcile;
    return { peers: PEERS, addSeconds: round(addSeconds), writesDuringAdd, noOpReconcileSeconds: round(noOpReconcileSeconds), writesDuringReconcile };
  } finally {
    await agent?.stop();
    await portal?.close();
    await lab.cleanup();
  }
}

/** Writes of peer changes to the interface so far, by any method (the agent's own counter). */
async function peerWrites(agent: RunningNodeAgent): Promise<number> {
  if (agent.metricsUrl === null) throw new Error('the agent serves no metrics');
  const metrics = await (await fetch(agent.metricsUrl)).text();
  return metrics
    .split('\n')
    .filter((line) => line.startsWith('vpn_node_wireguard_peer_writes_total{'))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

/** Resolves once a pass over the node finished and none followed for two seconds. */
async function passesSettled(portal: TestPortal, nodeNumber: ReturnType<typeof asNodeNumber>): Promise<void> {
  let last = 0;
  portal.portal.ctx.events.afterCommit((event) => {
    if (event.type === 'reconcile.finished' && event.nodeNumber === nodeNumber && event.reachable) last = performance.now();
  });
  await portal.portal.reconcileNow();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    if (last > 0 && performance.now() - last > 2000) return;
  }
}

interface SeededPeer {
  readonly publicKey: ReturnType<typeof asWireGuardKey>;
  readonly ipFour: string;
  readonly ipSix: string;
}

/** 10,000 configurations written into the portal's database, with the revision the adds carry. */
async function seedConfigurations(portal: TestPortal): Promise<SeededPeer[]> {
  const db = connectDatabase({ dialect: 'sqlite', path: portal.database.replace(/^sqlite:/, '') });
  const now = `${new Date().toISOString().slice(0, 19)}+00:00`;
  const expires = `${new Date(Date.now() + 86_400_000).toISOString().slice(0, 19)}+00:00`;
  const peers: SeededPeer[] = [];
  try {
    await db.transaction().execute(async (trx) => {
      for (let index = 0; index < PEERS; index++) {
        const { ipFour, ipSix } = clientAddressesAt(RANGE_FOUR, RANGE_SIX, index);
        const publicKey = generateWireGuardKeyPair().publicKey;
        const userId = `agent${index}`;
        await trx.insertInto('users').values({ user_id: userId, created_at: now, last_seen: now, auth_data: null }).execute();
        await trx
          .insertInto('wg_peers')
          .values({
            public_key: publicKey,
            user_id: userId,
            profile_id: 'bench',
            node_number: 0,
            display_name: 'Bench',
            ip_four: ipFour,
            ip_six: ipSix,
            pool_index: index,
            created_at: now,
            expires_at: expires,
            auth_key: null,
            revision: 1,
            expiry_warned: 0,
          })
          .execute();
        peers.push({ publicKey, ipFour, ipSix });
      }
      await trx.updateTable('ip_pools').set({ next_index: PEERS }).where('profile_id', '=', 'bench').execute();
    });
  } finally {
    await db.destroy();
  }
  return peers;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
