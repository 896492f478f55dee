// When the state an add comes from was read, and whether it is still young enough to send. The
// node's agent remembers a removal only for a while (REMOVAL_MEMORY_MS): an add read before a
// disable and held up longer than that (a portal frozen by SIGSTOP, a paused VM, a stalled event
// loop) would find the removal forgotten and put a revoked peer back. Such an add is not sent; the
// next reconcile pass reads again and sends what is still wanted. Both clocks count: the wall
// clock jumps over a paused VM, the monotonic one over a stopped process.
import { MAX_ADD_READ_AGE_MS } from '../../protocol/vpn-daemon.js';
import type { PortalContext } from '../context.js';

export interface ReadTime {
  readonly wallMs: number;
  readonly monotonicMs: number;
}

/** Taken before the state is read (earlier is on the safe side). */
export function readTimeNow(ctx: Pick<PortalContext, 'clock'>): ReadTime {
  return { wallMs: ctx.clock.now().getTime(), monotonicMs: performance.now() };
}

/** How long ago the state was read, by whichever clock says longer. */
export function ageOfRead(ctx: Pick<PortalContext, 'clock'>, read: ReadTime): number {
  return Math.max(ctx.clock.now().getTime() - read.wallMs, performance.now() - read.monotonicMs);
}

/** Whether an add of state read at `read` may still go to a node. */
export function youngEnoughToSend(ctx: Pick<PortalContext, 'clock'>, read: ReadTime): boolean {
  return ageOfRead(ctx, read) <= MAX_ADD_READ_AGE_MS;
}
