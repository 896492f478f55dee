// When reconcile work runs, one piece at a time per portal instance: a full pass at start and
// every `reconcileInterval`; a pass for one node as soon as the fleet says it answers again or
// lost its peers; and the expiry sweep at the moment the next configuration expires, so an
// expired configuration leaves its node within seconds rather than at the next full pass (the
// same sweep announces `configuration.expiring` when a warning falls due).
// With several portal instances on one PostgreSQL database only one runs a full pass at any
// moment (an advisory lock; the other skips it). A node pass takes the same lock but waits its
// turn (it tries again each second), so a node that comes back is refilled by one instance,
// not by all of them, and still by someone. Sweeps are not locked: they are short, and
// revisions make it safe for two instances to push to one node at once.
import { earliestCertificateExpiry } from '../../storage/certificates.js';
import { storageOutage } from '../../storage/errors.js';
import { ExclusiveLocks } from '../../storage/exclusive.js';
import { earliestPeerExpiry } from '../../storage/wg-peers.js';
import type { PortalContext } from '../context.js';
import type { NodeNumber } from '../../shared/ids.js';
import type { ReconcileReason } from '../../node-client/fleet.js';
import { announceExpiringConfigurations, nextExpiryWarningAt } from '../expiry/index.js';
import { runHousekeeping } from './housekeeping.js';
import { deleteExpiredConfigurations, reconcileAll, reconcileNode } from './pass.js';

/** The sweep never runs more often than this, whatever the clock says. */
const MIN_SWEEP_DELAY_MS = 1_000;
/** How soon a node pass tries again when another instance holds the reconcile lock. */
const NODE_PASS_RETRY_MS = 1_000;

export class ReconcileScheduler {
  private timer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private readonly pendingNodes = new Set<NodeNumber>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private readonly locks: ExclusiveLocks;
  private stopped = false;
  private intervalMs = 0;

  constructor(private readonly ctx: PortalContext) {
    this.locks = new ExclusiveLocks(ctx.db);
  }

  start(intervalMs: number): void {
    this.intervalMs = intervalMs;
    this.ctx.nodes.onReconcileNeeded((nodeNumber, reason) => this.requestNode(nodeNumber, reason));
    void this.runAll();
    this.timer = setInterval(() => void this.runAll(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.sweepTimer);
    for (const retry of this.retryTimers) clearTimeout(retry);
    this.retryTimers.clear();
  }

  /** Resolves once the work queued so far has run. */
  idle(): Promise<void> {
    return this.running;
  }

  runAll(): Promise<void> {
    if (this.stopped) return this.running;
    return this.enqueue(async () => {
      const result = await this.locks.run('reconcile', async () => {
        await reconcileAll(this.ctx);
        await runHousekeeping(this.ctx);
      });
      if (!result.ran) this.ctx.logger.info('reconcile pass skipped: another portal instance is running one');
      // Not under the lock: each warning is claimed by one instance (src/core/expiry/warnings.ts).
      await announceExpiringConfigurations(this.ctx);
    });
  }

  /** Queues a pass for one node; several requests for the same node before it runs make one pass. */
  requestNode(nodeNumber: NodeNumber, reason: ReconcileReason): void {
    if (this.stopped || this.pendingNodes.has(nodeNumber)) return;
    const daemon = this.ctx.nodes.daemon(nodeNumber);
    if (daemon === undefined) return;
    this.pendingNodes.add(nodeNumber);
    this.ctx.logger.debug({ nodeNumber, reason }, `reconcile of node ${nodeNumber} queued: it ${reason}`);
    void this.enqueue(async () => {
      this.pendingNodes.delete(nodeNumber);
      const result = await this.locks.run('reconcile', () => reconcileNode(this.ctx, daemon));
      if (result.ran) return;
      this.ctx.logger.debug(
        { nodeNumber },
        `reconcile of node ${nodeNumber} waits: another portal instance is reconciling`,
      );
      const retry = setTimeout(() => {
        this.retryTimers.delete(retry);
        this.requestNode(nodeNumber, reason);
      }, NODE_PASS_RETRY_MS);
      retry.unref();
      this.retryTimers.add(retry);
    });
  }

  private enqueue(work: () => Promise<void>): Promise<void> {
    this.running = this.running
      .then(async () => {
        if (this.stopped) return;
        await work();
      })
      .catch((error: unknown) => {
        // A database that is full, read-only or away is already reported by every call it
        // refuses; the pass is tried again at the next interval.
        const outage = storageOutage(error);
        if (outage === null) this.ctx.logger.error({ err: error }, 'reconcile pass failed');
        else this.ctx.logger.warn({ err: error, outage }, `reconcile pass failed: database ${outage}`);
      })
      .finally(() => this.scheduleSweep());
    return this.running;
  }

  /** Sets the sweep timer to the next expiry, at the latest one interval from now. */
  private scheduleSweep(): void {
    if (this.stopped) return;
    void this.nextExpiryDelay()
      .then((delayMs) => {
        if (this.stopped) return;
        clearTimeout(this.sweepTimer);
        this.sweepTimer = setTimeout(() => {
          void this.enqueue(async () => {
            await deleteExpiredConfigurations(this.ctx);
            await announceExpiringConfigurations(this.ctx);
          });
        }, delayMs);
        this.sweepTimer.unref();
      })
      .catch((error: unknown) => {
        this.ctx.logger.warn(
          { err: error },
          'cannot read the next expiry; the next reconcile pass deletes expired configurations',
        );
      });
  }

  /** Until the next expiry or `configuration.expiring` warning, whichever comes first. */
  private async nextExpiryDelay(): Promise<number> {
    const [peer, certificate, warning] = await Promise.all([
      earliestPeerExpiry(this.ctx.db),
      earliestCertificateExpiry(this.ctx.db),
      nextExpiryWarningAt(this.ctx),
    ]);
    const times = [peer, certificate]
      .filter((value): value is string => value !== null)
      .map((value) => new Date(value).getTime());
    if (warning !== null) times.push(warning.getTime());
    if (times.length === 0) return this.intervalMs;
    const untilNext = Math.min(...times) - this.ctx.clock.now().getTime();
    return Math.min(this.intervalMs, Math.max(MIN_SWEEP_DELAY_MS, untilNext));
  }
}
