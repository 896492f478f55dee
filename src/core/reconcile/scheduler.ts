// When reconcile work runs, per portal instance: a full pass at start and every
// `reconcileInterval`; a pass for one node as soon as the fleet says it answers again, lost its
// peers or refused a change; the housekeeping after a full pass; the profile checks directory
// group changes left undone, after every full pass (run or failed), a bounded share a run, in a
// lane and under a lock of their own; and the expiry sweep
// at the moment the next configuration expires (a create of this instance whose configuration
// expires sooner moves it forward, and the next expiry is read again every few seconds for what
// another process wrote), so an expired configuration leaves its node within seconds
// rather than at the next full pass (the same sweep announces `configuration.expiring` when a
// warning falls due); and a pass for a node that has not confirmed a revocation receipt made
// seconds ago, whoever made it (its own instance's push failed and that instance is gone or cut
// off from the node), so the revocation reaches the node then rather than at the next full pass.
//
// Full passes run one at a time. The expiry sweep has a lane of its own (one sweep at a time), so
// an expired configuration leaves its nodes within seconds even while a full pass takes a minute
// at a million configurations. A pass for one node does not queue behind either: it
// takes a place beside the full pass (src/core/reconcile/node-slots.ts: a few nodes at once for
// the heap, one pass per node, a node pass before the full pass's next node), so a revocation a
// node missed while it was away reaches it within seconds of its answering again, however long
// the full pass or the housekeeping takes. The housekeeping runs in a lane of its own: it touches
// nothing the nodes must hold (history, statistics, finished receipts, kept answers; expired
// configurations it deletes as the sweep does, which is safe beside any pass).
//
// What keeps a revoked peer off its node is not this order but revisions (src/storage/revisions.ts):
// every add carries the revision of the state it was read from, and the node ignores one older
// than a removal it applied, so no pass, wherever it runs, puts a revoked peer back.
//
// With several portal instances on one PostgreSQL database (advisory locks,
// src/storage/exclusive.ts): one instance at a time runs a full pass (the others skip theirs),
// and one at a time the housekeeping and the profile checks; the work on one node, a full pass's or a node pass's, is
// done by one instance at a time, so a node that comes back is refilled by one instance, not by
// all of them at once. A node pass that finds its node taken tries again each second; a full
// pass leaves that node to the instance at work on it. Sweeps are not locked: they are short,
// and revisions make it safe for two instances to push to one node at once. A lock lost with its
// connection (a server restart) stops the work under it at its next step, before the next node,
// between the housekeeping's steps, before the next user's profile check (LockLost, logged at
// warn): another instance may hold the lock by then. A portal that stops ends a full pass, the
// housekeeping and the profile checks the same way, at their next step.
import { earliestCertificateExpiry } from '../../storage/certificates.js';
import { storageOutage } from '../../storage/errors.js';
import {
  ExclusiveLocks,
  LockLost,
  type ExclusiveResult,
  type HeldLock,
  type LockKeepalive,
} from '../../storage/exclusive.js';
import { earliestPeerExpiry } from '../../storage/wg-peers.js';
import { nodesWithRevocationPendingBefore } from '../../storage/revocation-nodes.js';
import { formatAtom } from '../../shared/time.js';
import type { PortalContext } from '../context.js';
import type { NodeNumber } from '../../shared/ids.js';
import type { NodeDaemon } from '../../node-client/daemon-client.js';
import type { ReconcileReason } from '../../node-client/fleet.js';
import { applyEditedGroupProfiles, applyPendingGroupProfiles, type MappingAtStart } from '../directory/index.js';
import { announceExpiringConfigurations, nextExpiryWarningAt } from '../expiry/index.js';
import { runHousekeeping } from './housekeeping.js';
import { NodeSlots, type NodeWorkKind } from './node-slots.js';
import {
  deleteExpiredConfigurations,
  expectedListingBytes,
  PARALLEL_NODE_PASSES,
  reconcileAll,
  reconcileNode,
} from './pass.js';

/** The sweep never runs more often than this, whatever the clock says. */
const MIN_SWEEP_DELAY_MS = 1_000;
/**
 * How often the next expiry is read again: configurations another process wrote (`vpn-portal
 * import eduvpn`) tell no instance's scheduler, and must not outlive their expiry by a whole
 * `reconcileInterval`. Four indexed MIN queries.
 */
const EXPIRY_RECHECK_MS = 5_000;
/** How soon a node pass tries again when another instance is reconciling that node. */
const NODE_PASS_RETRY_MS = 1_000;
/**
 * A receipt still pending this long after its call was not confirmed by the push of the instance
 * that made it (that instance is gone, lost its path to the node, or is still pushing a very
 * large revocation): a node pass takes it to the node, whichever instance runs it.
 */
const STALE_REVOCATION_MS = 10_000;
/** How often each instance looks for such receipts. */
const STALE_CHECK_MS = 2_000;

/** The lock of one node's reconcile work, whoever does it. */
function nodeLock(nodeNumber: NodeNumber): string {
  return `reconcile-node:${nodeNumber}`;
}

/** Work ended at its next step because the portal stops. */
class Stopping extends Error {
  override readonly name = 'Stopping';
}

/** The work the scheduler reports on when it fails. */
type ScheduledWork =
  | 'reconcile pass'
  | 'housekeeping'
  | 'directory profile checks'
  | 'expiry sweep'
  | 'pending revocations check';

export class ReconcileScheduler {
  private timer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private staleTimer: NodeJS.Timeout | undefined;
  /** The look for stale receipts under way, if any. */
  private staleCheck: Promise<void> | null = null;
  /**
   * Nodes asked for a pass for a stale receipt: when one may be asked again (performance.now())
   * and the wait after that, doubled each time up to the interval, so a receipt a pass cannot
   * confirm (a node that refuses to be emptied) costs few passes.
   */
  private readonly staleNodes = new Map<NodeNumber, { readonly nextMs: number; readonly waitMs: number }>();
  /** When the pending sweep timer fires (performance.now()); null when none is pending. */
  private sweepDueMs: number | null = null;
  private expiryRecheckTimer: NodeJS.Timeout | undefined;
  /** Full passes, one after the other. */
  private running: Promise<void> = Promise.resolve();
  /** The expiry sweep under way, if any. */
  private sweeping: Promise<void> | null = null;
  /** The housekeeping under way, if any. */
  private housekeeping: Promise<void> | null = null;
  /** The pending directory profile checks under way, if any. */
  private profileChecks: Promise<void> | null = null;
  /**
   * Whether this instance has still to compare its `scim.groupProfiles` with the mapping last
   * applied (src/core/directory/mapping-change.ts): the start does, and when the database
   * refused, the profile checks try again until done. Never after: instances with different
   * mappings must not make each other note everyone again and again.
   */
  private mappingToApply: { readonly atStart: MappingAtStart | undefined } | null = null;
  /** Node passes under way or waiting for their place. */
  private readonly nodePasses = new Set<Promise<void>>();
  private readonly pendingNodes = new Set<NodeNumber>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  /** Weighed against the budget the Admin API's listings of the nodes take from too. */
  private readonly slots: NodeSlots;
  private readonly locks: ExclusiveLocks;
  private stopped = false;
  private intervalMs = 0;

  /** `lockKeepalive`: how soon PostgreSQL lets go of the locks of an instance whose host vanished (tests shorten it). */
  constructor(
    private readonly ctx: PortalContext,
    lockKeepalive?: LockKeepalive,
  ) {
    this.locks = new ExclusiveLocks(ctx.db, lockKeepalive, (error) =>
      ctx.logger.warn(
        { err: error },
        'the database refused the lock connection keepalive settings: the locks of a portal host that vanishes are freed only by the system TCP keepalive (hours)',
      ),
    );
    this.slots = new NodeSlots(PARALLEL_NODE_PASSES, ctx.nodes.listingBudget);
  }

  start(intervalMs: number): void {
    this.intervalMs = intervalMs;
    this.ctx.nodes.onReconcileNeeded((nodeNumber, reason) => this.requestNode(nodeNumber, reason));
    this.scheduleSweep();
    // Quietly: a database that is away is reported by the passes and sweeps, not every 5 s.
    this.expiryRecheckTimer = setInterval(() => this.scheduleSweep({ quiet: true }), EXPIRY_RECHECK_MS);
    this.expiryRecheckTimer.unref();
    this.staleTimer = setInterval(() => this.checkStaleRevocations(), STALE_CHECK_MS);
    this.staleTimer.unref();
    void this.runAll();
    this.timer = setInterval(() => void this.runAll(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.sweepTimer);
    clearInterval(this.expiryRecheckTimer);
    clearInterval(this.staleTimer);
    this.sweepDueMs = null;
    for (const retry of this.retryTimers) clearTimeout(retry);
    this.retryTimers.clear();
  }

  /** Resolves once the work under way or queued (passes, housekeeping, sweeps) has run. */
  async idle(): Promise<void> {
    for (;;) {
      const running = this.running;
      await Promise.all([
        running,
        this.housekeeping,
        this.profileChecks,
        this.sweeping,
        this.staleCheck,
        ...this.nodePasses,
      ]);
      if (
        running === this.running &&
        this.housekeeping === null &&
        this.profileChecks === null &&
        this.sweeping === null &&
        this.staleCheck === null &&
        this.nodePasses.size === 0
      )
        return;
    }
  }

  /**
   * A full pass, then the housekeeping and the pending profile checks; resolves once they, and
   * the node passes they set off, are done.
   */
  async runAll(): Promise<void> {
    if (!this.stopped)
      await this.enqueue(async () => {
        try {
          const result = await this.locks.run('reconcile', (held) =>
            reconcileAll(
              this.ctx,
              async (daemon, work) => {
                const turn = await this.onNode(daemon, 'full pass', work);
                if (!turn.ran)
                  this.ctx.logger.debug(
                    { nodeNumber: daemon.nodeNumber },
                    `reconcile pass leaves node ${daemon.nodeNumber} alone: another portal instance is reconciling it`,
                  );
                return turn.ran ? turn.value : undefined;
              },
              () => this.checkpoint(held),
            ),
          );
          if (result.ran) this.startHousekeeping();
          else this.ctx.logger.info('reconcile pass skipped: another portal instance is running one');
        } finally {
          // Whether the pass ran, was skipped or failed: a failing node or a busy lock does not hold them back.
          this.startProfileChecks();
        }
        // Not under the lock: each warning is claimed by one instance (src/core/expiry/warnings.ts).
        await announceExpiringConfigurations(this.ctx);
      });
    await this.idle();
  }

  /** Starts a pass for one node; several requests for the same node before it starts make one pass. */
  requestNode(nodeNumber: NodeNumber, reason: ReconcileReason): void {
    if (this.stopped || this.pendingNodes.has(nodeNumber)) return;
    const daemon = this.ctx.nodes.daemon(nodeNumber);
    if (daemon === undefined) return;
    this.pendingNodes.add(nodeNumber);
    this.ctx.logger.debug({ nodeNumber, reason }, `reconcile of node ${nodeNumber} queued: it ${reason}`);
    const pass = this.nodePass(daemon, reason).finally(() => this.nodePasses.delete(pass));
    this.nodePasses.add(pass);
  }

  private async nodePass(daemon: NodeDaemon, reason: ReconcileReason): Promise<void> {
    const nodeNumber = daemon.nodeNumber;
    let ran = true;
    try {
      const weight = await expectedListingBytes(this.ctx, daemon);
      const turn = await this.slots.run(
        nodeNumber,
        'node pass',
        async (): Promise<ExclusiveResult<unknown>> => {
          // From here on a new request for the node makes a pass of its own, after this one.
          this.pendingNodes.delete(nodeNumber);
          if (this.stopped) return { ran: true, value: null };
          return this.locks.run(nodeLock(nodeNumber), (held) => {
            held.check();
            return reconcileNode(this.ctx, daemon);
          });
        },
        weight,
      );
      ran = turn.ran;
    } catch (error) {
      this.pendingNodes.delete(nodeNumber);
      this.reportFailure('reconcile pass', error);
      // Its lock went with its connection: tried again, on a fresh one.
      if (error instanceof LockLost) ran = false;
    }
    if (ran || this.stopped) return;
    this.ctx.logger.debug(
      { nodeNumber },
      `reconcile of node ${nodeNumber} waits: another portal instance is reconciling it`,
    );
    const retry = setTimeout(() => {
      this.retryTimers.delete(retry);
      this.requestNode(nodeNumber, reason);
    }, NODE_PASS_RETRY_MS);
    retry.unref();
    this.retryTimers.add(retry);
  }

  /**
   * Runs one node's work in its place (src/core/reconcile/node-slots.ts), weighed by what its
   * listings are expected to take, under the node's lock.
   */
  private async onNode<T>(daemon: NodeDaemon, kind: NodeWorkKind, work: () => Promise<T>): Promise<ExclusiveResult<T>> {
    const weight = await expectedListingBytes(this.ctx, daemon);
    return this.slots.run(
      daemon.nodeNumber,
      kind,
      () => this.locks.run(nodeLock(daemon.nodeNumber), () => work()),
      weight,
    );
  }

  /**
   * The start could not apply an edited `scim.groupProfiles`: the next profile checks do, first,
   * over the mapping the start read only (`atStart`; undefined: the start could not read it).
   */
  applyEditedMappingLater(atStart: MappingAtStart | undefined): void {
    this.mappingToApply = { atStart };
  }

  /** Between the steps of locked work: ends it when the portal stops or its lock was lost. */
  private checkpoint(held: HeldLock): void {
    if (this.stopped) throw new Stopping('the portal stops');
    held.check();
  }

  /** The housekeeping, unless it is under way already; nothing waits for it but `idle()`. */
  private startHousekeeping(): void {
    if (this.housekeeping !== null || this.stopped) return;
    this.housekeeping = this.locks
      .run('housekeeping', (held) => runHousekeeping(this.ctx, () => this.checkpoint(held)))
      .then((result) => {
        if (!result.ran) this.ctx.logger.debug('housekeeping skipped: another portal instance is running it');
      })
      .catch((error: unknown) => this.reportFailure('housekeeping', error))
      .finally(() => {
        this.housekeeping = null;
      });
  }

  /**
   * The profile checks directory group changes left undone (src/core/directory/group-profiles.ts),
   * unless under way already; under a lock of their own, so a large backlog holds back no full pass.
   */
  private startProfileChecks(): void {
    if (this.profileChecks !== null || this.stopped) return;
    this.profileChecks = this.locks
      .run('directory-profile-checks', async (held) => {
        if (this.mappingToApply !== null) {
          await applyEditedGroupProfiles(this.ctx, this.mappingToApply.atStart);
          this.mappingToApply = null;
        }
        return applyPendingGroupProfiles(this.ctx, { checkpoint: () => this.checkpoint(held) });
      })
      .then((result) => {
        if (!result.ran) this.ctx.logger.debug('profile checks skipped: another portal instance is running them');
      })
      .catch((error: unknown) => this.reportFailure('directory profile checks', error))
      .finally(() => {
        this.profileChecks = null;
      });
  }

  private enqueue(work: () => Promise<void>): Promise<void> {
    this.running = this.running
      .then(async () => {
        if (this.stopped) return;
        await work();
      })
      .catch((error: unknown) => this.reportFailure('reconcile pass', error))
      .finally(() => this.scheduleSweep());
    return this.running;
  }

  /**
   * A database that is full, read-only or away is already reported by every call it refuses;
   * the work is tried again at the next interval (a node pass: at the next full pass; a sweep: a
   * second later, as what expired is still there).
   */
  private reportFailure(what: ScheduledWork, error: unknown): void {
    if (error instanceof Stopping) {
      this.ctx.logger.info(`${what} ended early: the portal stops`);
      return;
    }
    if (error instanceof LockLost) {
      this.ctx.logger.warn({ err: error }, `${what} stopped: its lock was lost with its database connection`);
      return;
    }
    const outage = storageOutage(error);
    if (outage === null) this.ctx.logger.error({ err: error }, `${what} failed`);
    else this.ctx.logger.warn({ err: error, outage }, `${what} failed: database ${outage}`);
  }

  /**
   * A configuration was just stored (by this instance) to expire at `expiresAt`: the sweep is
   * moved forward when that comes before the one set, which was set for the earliest expiry
   * known then. Each instance does so for its own creates; sweeps are not locked.
   */
  noticeExpiry(expiresAt: Date): void {
    if (this.stopped || this.intervalMs === 0) return;
    const untilExpiry = expiresAt.getTime() - this.ctx.clock.now().getTime();
    this.setSweepTimer(Math.min(this.intervalMs, Math.max(MIN_SWEEP_DELAY_MS, untilExpiry)));
  }

  /**
   * Asks for a pass of every node that answers and has not confirmed a receipt that is stale
   * (STALE_REVOCATION_MS): without it, such a tunnel ran on until the next full pass. A node held
   * for down is left to the pass it gets when it answers again.
   */
  private checkStaleRevocations(): void {
    if (this.stopped || this.staleCheck !== null) return;
    this.staleCheck = (async () => {
      const before = formatAtom(new Date(this.ctx.clock.now().getTime() - STALE_REVOCATION_MS));
      const pending = await nodesWithRevocationPendingBefore(this.ctx.db, before);
      for (const nodeNumber of this.staleNodes.keys()) if (!pending.has(nodeNumber)) this.staleNodes.delete(nodeNumber);
      for (const { nodeNumber } of this.ctx.nodes.all()) {
        if (this.stopped || !pending.has(nodeNumber) || this.ctx.nodes.isDown(nodeNumber)) continue;
        const asked = this.staleNodes.get(nodeNumber);
        if (asked !== undefined && performance.now() < asked.nextMs) continue;
        const waitMs = asked === undefined ? STALE_REVOCATION_MS : Math.min(this.intervalMs, asked.waitMs * 2);
        this.staleNodes.set(nodeNumber, { nextMs: performance.now() + waitMs, waitMs });
        this.requestNode(nodeNumber, 'has a revocation pending');
      }
    })()
      .catch((error: unknown) => this.reportFailure('pending revocations check', error))
      .finally(() => {
        this.staleCheck = null;
      });
  }

  /** Sets the sweep timer to the next expiry, at the latest one interval from now. */
  private scheduleSweep({ quiet = false } = {}): void {
    if (this.stopped) return;
    void this.nextExpiryDelay()
      .then((delayMs) => {
        if (this.stopped) return;
        this.setSweepTimer(delayMs);
      })
      .catch((error: unknown) => {
        if (quiet) return;
        this.ctx.logger.warn(
          { err: error },
          'cannot read the next expiry; the next reconcile pass deletes expired configurations',
        );
      });
  }

  /**
   * Deletes what expired and announces the warnings due, beside whatever else runs: a full pass
   * may have read an expiring peer as wanted, but its add carries the revision read then, older
   * than the sweep's removal, so the node keeps it off (src/storage/revisions.ts). A sweep
   * still under way when the timer fires is left to finish; it sets the timer again when done.
   */
  private sweep(): void {
    if (this.stopped || this.sweeping !== null) return;
    this.sweeping = (async () => {
      await deleteExpiredConfigurations(this.ctx);
      await announceExpiringConfigurations(this.ctx);
    })()
      .catch((error: unknown) => this.reportFailure('expiry sweep', error))
      .finally(() => {
        this.sweeping = null;
        this.scheduleSweep();
      });
  }

  /**
   * Sets the sweep timer, unless one pending fires sooner: the expiries read for this one may
   * predate a create noticed meanwhile, and a sweep that comes early only finds nothing due.
   */
  private setSweepTimer(delayMs: number): void {
    const dueMs = performance.now() + delayMs;
    if (this.sweepDueMs !== null && this.sweepDueMs <= dueMs) return;
    clearTimeout(this.sweepTimer);
    this.sweepDueMs = dueMs;
    this.sweepTimer = setTimeout(() => {
      this.sweepDueMs = null;
      this.sweep();
    }, delayMs);
    this.sweepTimer.unref();
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
