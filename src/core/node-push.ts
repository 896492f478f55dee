// One push per item to the item's node, a few at a time, right after the database changed.
// A node held for down (it failed once, and the probe has not seen it answer since) is not
// contacted at all, for adds and revocations alike: a hung node would cost every call one
// timeout. The fleet probes it every second and reconciles it as soon as it answers, and that
// pass applies what it missed, removals included (a disabled peer is no longer in the
// database's view of the node; revisions keep an old add from putting it back). A node that
// fails during this call is held for down from then on, and its other items stop waiting. The
// caller learns how many pushes each node missed, to log it (or report it as pending).
import type { NodeDaemon } from '../node-client/daemon-client.js';
import type { PortalContext } from './context.js';
import type { NodeNumber } from '../shared/ids.js';
import { forEachLimited } from '../shared/limited-parallel.js';

const PUSH_PARALLELISM = 16;

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
  nodeOf: (item: T) => NodeNumber,
  push: (daemon: NodeDaemon, item: T) => Promise<R>,
): Promise<PushOutcome<T, R>> {
  const missed = new Map<NodeNumber, number>();
  const done: { item: T; answer: R }[] = [];
  await forEachLimited(items, PUSH_PARALLELISM, async (item) => {
    const nodeNumber = nodeOf(item);
    // The fleet answers undefined for a skip or a failure, so the answer travels wrapped.
    const action = async (daemon: NodeDaemon) => ({ answer: await push(daemon, item) });
    const result = await ctx.nodes.tryOn(nodeNumber, what, action);
    if (result !== undefined) {
      done.push({ item, answer: result.answer });
      return;
    }
    missed.set(nodeNumber, (missed.get(nodeNumber) ?? 0) + 1);
  });
  return { missed, done };
}
