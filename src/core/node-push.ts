// One push per item to the item's node, a few at a time, right after the database changed.
// A node that is down is skipped and one that fails is marked down (the fleet asks it again
// every second and reconciles it as soon as it answers); the caller learns how many pushes
// each node missed, to say so in the log.
import type { NodeDaemon } from '../node/daemon-client.js';
import type { PortalContext } from './context.js';
import type { NodeNumber } from './ids.js';
import { forEachLimited } from './limited-parallel.js';

const PUSH_PARALLELISM = 16;

export async function pushToNodes<T>(
  ctx: PortalContext,
  items: readonly T[],
  what: string,
  nodeOf: (item: T) => NodeNumber,
  push: (daemon: NodeDaemon, item: T) => Promise<void>,
): Promise<Map<NodeNumber, number>> {
  const missed = new Map<NodeNumber, number>();
  await forEachLimited(items, PUSH_PARALLELISM, async (item) => {
    const nodeNumber = nodeOf(item);
    // tryOn answers undefined for a skip or a failure, and so would a bare Promise<void>: count on `true`.
    const done = await ctx.nodes.tryOn(nodeNumber, what, (daemon) => push(daemon, item).then(() => true));
    if (done !== true) missed.set(nodeNumber, (missed.get(nodeNumber) ?? 0) + 1);
  });
  return missed;
}
