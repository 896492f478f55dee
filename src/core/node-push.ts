// One push per item to the item's node, a few at a time, right after the database changed.
// Adds skip a node that is down: the fleet asks it again every second and reconciles it as
// soon as it answers, which brings them. Revocations (removals, disconnects) are tried even on
// a node held for down, because it may be back already and the probe has not noticed yet; a
// node that fails one of them in this call is not tried again in it, so a hung node costs one
// timeout, not one per item. The caller learns how many pushes each node missed, to log it.
import type { NodeDaemon } from '../node-client/daemon-client.js';
import type { PortalContext } from './context.js';
import type { NodeNumber } from '../shared/ids.js';
import { forEachLimited } from '../shared/limited-parallel.js';

const PUSH_PARALLELISM = 16;

/** `skip`: leave a node that is down to its recovery pass; `try`: ask it anyway (revocations). */
export type WhenDown = 'skip' | 'try';

export interface PushOutcome<T, R> {
  /** Pushes each node missed (it was down or failed). */
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
  const failedNow = new Set<NodeNumber>();
  await forEachLimited(items, PUSH_PARALLELISM, async (item) => {
    const nodeNumber = nodeOf(item);
    // The fleet answers undefined for a skip or a failure, so the answer travels wrapped.
    const action = async (daemon: NodeDaemon) => ({ answer: await push(daemon, item) });
    const result =
      whenDown === 'try' && !failedNow.has(nodeNumber) ? await ctx.nodes.ask(nodeNumber, what, action) : await ctx.nodes.tryOn(nodeNumber, what, action);
    if (result !== undefined) {
      done.push({ item, answer: result.answer });
      return;
    }
    failedNow.add(nodeNumber);
    missed.set(nodeNumber, (missed.get(nodeNumber) ?? 0) + 1);
  });
  return { missed, done };
}
