// One push per item to the item's node, a few at a time, right after the database changed.
// Adds skip a node held for down (it failed once, and the probe has not seen it answer since):
// the fleet probes it every second and reconciles it as soon as it answers, which brings them.
// Revocations (removals, disconnects) first glance at such a node, once per call: whether it
// answers `/i/node` within GLANCE_MS. It may be back before the probe noticed (a node coming
// back while a recovery pass of another portal instance adds peers), and a removal that waits
// for the probe leaves a tunnel up after the call answered. A hung node so costs a revocation
// at most GLANCE_MS, never a whole timeout; what it missed, the recovery pass applies
// (revisions keep an old add from putting a removed peer back). A node that fails during this call is held for down from then on, and its other
// items stop waiting. The caller learns how many pushes each node missed, to log it (or report
// it as pending).
import type { NodeDaemon } from '../../node-client/daemon-client.js';
import type { PortalContext } from '../context.js';
import type { NodeNumber } from '../../shared/ids.js';
import { forEachLimited } from '../../shared/limited-parallel.js';

const PUSH_PARALLELISM = 16;
/** How long a revocation waits for a node held for down before leaving it to the recovery pass. */
const GLANCE_MS = 200;

/** `skip`: leave a node held for down to its recovery pass (adds); `glance`: look once, briefly (revocations). */
export type WhenDown = 'skip' | 'glance';

export interface PushOutcome<T, R> {
  /** Pushes each node missed (it was held for down, or failed): the recovery pass applies them. */
  readonly missed: Map<NodeNumber, number>;
  /** The items the nodes took, with what they answered. */
  readonly done: readonly { readonly item: T; readonly answer: R }[];
}

export async function pushToNodes<T, R>(
  ctx: PortalContext,
  items: readonly T[],
  what: string,
  whenDown: WhenDown,
  nodeOf: (item: T) => NodeNumber,
  push: (daemon: NodeDaemon, item: T) => Promise<R>,
): Promise<PushOutcome<T, R>> {
  const missed = new Map<NodeNumber, number>();
  const done: { item: T; answer: R }[] = [];
  // One glance per node held for down and call; its items wait for it, then go if it answered.
  const glances = new Map<NodeNumber, Promise<boolean>>();
  await forEachLimited(items, PUSH_PARALLELISM, async (item) => {
    const nodeNumber = nodeOf(item);
    if (whenDown === 'glance' && (glances.has(nodeNumber) || ctx.nodes.isDown(nodeNumber))) {
      const glance = glances.get(nodeNumber) ?? ctx.nodes.glance(nodeNumber, GLANCE_MS);
      glances.set(nodeNumber, glance);
      await glance;
    }
    // The fleet answers undefined for a skip or a failure, so the answer travels wrapped.
    const result = await ctx.nodes.tryOn(nodeNumber, what, async (daemon) => ({ answer: await push(daemon, item) }));
    if (result !== undefined) {
      done.push({ item, answer: result.answer });
      return;
    }
    missed.set(nodeNumber, (missed.get(nodeNumber) ?? 0) + 1);
  });
  return { missed, done };
}
