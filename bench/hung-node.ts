// Admin API latency while a node hangs, as a figure next to its target rather than a timed test
// (a timed bound fails on a busy machine; test/e2e/hung-node.test.ts checks instead that no call
// sends the hung node anything). A tunnel lab with two nodes: 30 users' configurations on node 0,
// whose agent is then stopped with SIGSTOP; after the first call that waits for it in vain (the
// node timeout, once), 200 calls of every kind, one at a time. Target: p99 ≤ 0.5 s
// (docs/hung-nodes.md). Run by bench/run.sh (BENCH_ONLY=hung runs it alone).
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { readFile, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { asNodeNumber } from '../src/shared/ids.js';
import { LAB_PROFILE, startTunnelLab, type TunnelLab } from '../test/support/tunnel-lab.js';

const TARGET_P99_MS = 500;
const USERS_ON_NODE_ZERO = 30;
const CALLS = 200;

async function setMaintenance(lab: TunnelLab, on: boolean): Promise<void> {
  const second = lab.secondNode;
  const config = JSON.parse(await readFile(second.agentConfigFile, 'utf8')) as Record<string, unknown>;
  await writeFile(second.agentConfigFile, JSON.stringify({ ...config, maintenanceMode: on }));
  second.agent.child.kill('SIGHUP');
  for (let tries = 0; tries < 100 && lab.portal.portal.ctx.nodes.isInMaintenance(asNodeNumber(1)) !== on; tries++)
    await sleep(100);
}

function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? Number.NaN;
}

async function main(): Promise<void> {
  const lab = await startTunnelLab({
    secondNode: true,
    portalConfig: { reconcileInterval: 'PT1H', logLevel: 'silent' },
  });
  const agentPid = lab.agent.child.pid;
  if (agentPid === undefined) throw new Error('the agent has no pid');
  try {
    await lab.portal.reconcile();
    // Node 1 drained while the users are made, so that all of them are on node 0.
    await setMaintenance(lab, true);
    const users = Array.from({ length: USERS_ON_NODE_ZERO }, (_, index) => `user-${index}`);
    for (const userId of users) await lab.portal.post('/create', { user_id: userId, profile_id: LAB_PROFILE });
    await setMaintenance(lab, false);

    process.kill(agentPid, 'SIGSTOP');
    const loadBefore = loadavg();
    const firstStarted = performance.now();
    await lab.portal.get('/connected_users');
    const firstMs = performance.now() - firstStarted;

    const kinds: (() => Promise<unknown>)[] = [
      () => lab.portal.post('/create', { user_id: `new-${performance.now()}`, profile_id: LAB_PROFILE }),
      () => lab.portal.post('/disable_user', { user_id: users.shift() ?? 'nobody' }),
      () => lab.portal.get('/connected_users'),
      () => lab.portal.get('/connection_list'),
      () => lab.portal.get('/users'),
    ];
    const durations: number[] = [];
    for (let index = 0; index < CALLS; index++) {
      const started = performance.now();
      await (kinds[index % kinds.length] as () => Promise<unknown>)();
      durations.push(performance.now() - started);
    }
    process.kill(agentPid, 'SIGCONT');
    const sorted = durations.sort((a, b) => a - b);
    const p99 = percentile(sorted, 0.99);
    console.log(
      [
        `hung node: first call ${Math.round(firstMs)} ms (waits for the node timeout once)`,
        `  ${CALLS} calls while it hung: median ${Math.round(percentile(sorted, 0.5))} ms, p99 ${Math.round(p99)} ms, slowest ${Math.round(sorted.at(-1) ?? 0)} ms (target p99 ≤ ${TARGET_P99_MS} ms: ${p99 <= TARGET_P99_MS ? 'met' : 'NOT met'})`,
        `  load average ${loadBefore.map((load) => load.toFixed(1)).join(' ')} before, ${loadavg()
          .map((load) => load.toFixed(1))
          .join(' ')} after`,
      ].join('\n'),
    );
  } finally {
    try {
      process.kill(agentPid, 'SIGCONT');
    } catch {
      // Already gone.
    }
    await lab.close();
  }
}

await main();
