// When this instance last finished a reconcile pass of each node, for the console's dashboard:
// heard from the events seam (reconcile.finished), kept in memory (another instance's passes are
// its own; after a restart the first pass fills it in within `reconcileInterval`).
import type { PortalContext } from '../../core/context.js';
import type { PortalEvents } from '../../core/events.js';
import type { NodeNumber } from '../../shared/ids.js';

const passes = new WeakMap<PortalEvents, Map<NodeNumber, { at: Date; reachable: boolean }>>();

export function trackReconciles(ctx: PortalContext): void {
  if (passes.has(ctx.events)) return;
  const times = new Map<NodeNumber, { at: Date; reachable: boolean }>();
  passes.set(ctx.events, times);
  ctx.events.afterCommit((event) => {
    if (event.type === 'reconcile.finished') times.set(event.nodeNumber, { at: event.at, reachable: event.reachable });
  });
}

/** The last pass of the node as text, or null when none finished on this instance yet. */
export function lastReconcile(ctx: PortalContext, nodeNumber: NodeNumber): string | null {
  const pass = passes.get(ctx.events)?.get(nodeNumber);
  if (pass === undefined) return null;
  return `${pass.at.toISOString()}${pass.reachable ? '' : ' (node did not answer)'}`;
}
