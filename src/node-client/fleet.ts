// The portal's view of its nodes. Changes are pushed to a node at once; when a node cannot
// be reached the change stays in the database (the source of truth), the node is asked
// again every second, and as soon as it answers it is reconciled. A node is also watched
// while it answers: when it lost its peers (our agent restarted, or wireguard-go did, or the
// host rebooted) it is reconciled at once. After its first failure (a hung node: one timeout)
// the node is held for down: calls do not contact it at all until the probe sees it answer
// again, calls still waiting on it stop waiting, and listings use its last known answers, so a
// dead or hung node does not slow any request.
import type { Logger } from 'pino';
import type { NodeNumber } from '../shared/ids.js';
import type { Clock } from '../shared/time.js';
import { elapsedSince, monotonicNow, type MonotonicMs } from '../shared/monotonic.js';
import type { NatMode } from '../protocol/vpn-daemon.js';
import { ListingBudget, listingBudgetBytes } from './listing-budget.js';
import { ListingTooLargeError, NodeDaemonError, type DaemonNodeInfo, type NodeDaemon } from './daemon-client.js';

/** How often a node that failed is asked again. */
const PROBE_INTERVAL_MS = 1_000;
/** How often a node that answers is asked whether it lost its peers. */
const WATCH_INTERVAL_MS = 2_000;
/** A listing still over the limit is logged at error again after this long (in between: debug). */
const OVER_LIMIT_REPEAT_MS = 10 * 60_000;

/** Why a node needs a reconcile pass now. */
export type ReconcileReason = 'answers again' | 'lost its peers' | 'refused a change' | 'has a revocation pending';

export type NodeStateChange =
  | { readonly nodeNumber: NodeNumber; readonly up: true }
  | { readonly nodeNumber: NodeNumber; readonly up: false; readonly reason: string };

interface NodeState {
  /** Clock time of the first failure of the current outage; null while the node answers. */
  downSince: number | null;
  /** Identity of the node's peer set as last seen: agent instance, else host uptime. */
  lastInfo: DaemonNodeInfo | null;
  probing: boolean;
  /** The calls waiting on the node now: when it is marked down they stop waiting. */
  readonly waiting: Set<(reason: Error) => void>;
  /** The last answer to each question a listing asks (`what`), for while the node does not answer. */
  readonly lastAnswers: Map<string, unknown>;
  /** The listings (`what`) whose last answer was longer than the portal reads, and when that was last logged. */
  readonly overLimit: Map<string, { readonly limitBytes: number; readonly since: Date; loggedAt: MonotonicMs }>;
}

/** A listing the node answered with more than the portal reads (ListingTooLargeError), since when. */
export interface ListingOverLimit {
  readonly what: string;
  readonly limitBytes: number;
  readonly since: Date;
}

/** What a node answered a listing's question; `stale`: it did not answer now, this is its last known answer (undefined: none). */
export type NodeAnswer<T> =
  | { readonly stale: false; readonly answer: T }
  | { readonly stale: true; readonly answer: T | undefined };

export class NodeFleet {
  private readonly states = new Map<NodeNumber, NodeState>();
  /** Requests sent to each node, by what they asked (for the metrics: which calls reach a node). */
  private readonly requests = new Map<NodeNumber, Map<string, number>>();
  private reconcileListener: (nodeNumber: NodeNumber, reason: ReconcileReason) => void = () => {};
  private stateListener: (change: NodeStateChange) => void = () => {};
  private natListener: (nodeNumber: NodeNumber, nat: NatMode | null, firstContact: Date) => Promise<void> =
    async () => {};
  /** The NAT each node last reported, as handed to the NAT listener (JSON text): told again only when it changes. */
  private readonly natSeen = new Map<NodeNumber, string>();
  /** When this portal first heard a node's `/i/node` answer: no NAT it reports can be vouched for before. */
  private readonly firstContact = new Map<NodeNumber, Date>();
  private watchTimer: NodeJS.Timeout | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly daemons: ReadonlyMap<NodeNumber, NodeDaemon>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** The heap the nodes' listings may take at once, by reconcile passes and Admin API listings together. */
    readonly listingBudget = new ListingBudget(listingBudgetBytes()),
  ) {
    for (const nodeNumber of daemons.keys()) {
      this.states.set(nodeNumber, {
        downSince: null,
        lastInfo: null,
        probing: false,
        waiting: new Set(),
        lastAnswers: new Map(),
        overLimit: new Map(),
      });
    }
  }

  daemon(nodeNumber: NodeNumber): NodeDaemon | undefined {
    return this.daemons.get(nodeNumber);
  }

  all(): NodeDaemon[] {
    return [...this.daemons.values()];
  }

  /** Called when a node must be reconciled at once (the portal queues a pass for it). */
  onReconcileNeeded(listener: (nodeNumber: NodeNumber, reason: ReconcileReason) => void): void {
    this.reconcileListener = listener;
  }

  /** Called when a node stops answering, and when it answers again. */
  onStateChange(listener: (change: NodeStateChange) => void): void {
    this.stateListener = listener;
  }

  /**
   * Called when a node reports a NAT other than the one it reported before (and at its first
   * answer): the portal records the node's mapping history. A listener that fails is called
   * again at the node's next answer. `firstContact`: when this portal first heard the node answer.
   */
  onNatReport(listener: (nodeNumber: NodeNumber, nat: NatMode | null, firstContact: Date) => Promise<void>): void {
    this.natListener = listener;
  }

  /** What a node answered to `/i/node` about its NAT (the watch and the reconcile pass both read it). */
  async noticeNat(nodeNumber: NodeNumber, nat: NatMode | null): Promise<void> {
    const text = JSON.stringify(nat);
    let firstContact = this.firstContact.get(nodeNumber);
    if (firstContact === undefined) {
      firstContact = this.clock.now();
      this.firstContact.set(nodeNumber, firstContact);
    }
    if (this.natSeen.get(nodeNumber) === text) return;
    try {
      await this.natListener(nodeNumber, nat, firstContact);
      this.natSeen.set(nodeNumber, text);
    } catch (error) {
      this.logger.warn({ nodeNumber, err: error }, `the NAT node ${nodeNumber} reports could not be recorded`);
    }
  }

  /** Starts asking every node, in the background, whether it answers and whether it lost its peers. */
  startWatching(): void {
    // Learn each node's state (maintenance, instance) at once, not only after the first tick.
    void this.watchAll();
    this.watchTimer = setInterval(() => void this.watchAll(), WATCH_INTERVAL_MS);
    this.watchTimer.unref();
    this.probeTimer = setInterval(() => void this.probeDown(), PROBE_INTERVAL_MS);
    this.probeTimer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.watchTimer);
    clearInterval(this.probeTimer);
  }

  /** Whether the node said it is in maintenance when last asked (`maintenance_mode` of `/i/node`). */
  isInMaintenance(nodeNumber: NodeNumber): boolean {
    return this.states.get(nodeNumber)?.lastInfo?.maintenanceMode ?? false;
  }

  /** Peers on the node's WireGuard interface, as it said when last asked (null: not yet, or it does not say). */
  reportedPeerCount(nodeNumber: NodeNumber): number | null {
    return this.states.get(nodeNumber)?.lastInfo?.peerCount ?? null;
  }

  /**
   * The node's listings whose last answer was longer than the portal reads: while its peer list
   * is one of them the node is not reconciled (docs/nodes.md, capacity).
   */
  listingsOverLimit(nodeNumber: NodeNumber): ListingOverLimit[] {
    const overLimit = this.states.get(nodeNumber)?.overLimit ?? new Map();
    return [...overLimit].map(([what, { limitBytes, since }]) => ({ what, limitBytes, since }));
  }

  /** Requests sent so far to each node, by what they asked (`add_peer`, `probe`, `glance`, …). */
  requestsSent(): ReadonlyMap<NodeNumber, ReadonlyMap<string, number>> {
    return this.requests;
  }

  /** Whether the node failed its last contact and has not answered since. */
  isDown(nodeNumber: NodeNumber): boolean {
    return (this.states.get(nodeNumber)?.downSince ?? null) !== null;
  }

  /**
   * A node agent asked for its server configuration: it may have just started with an empty
   * interface. Look at it now rather than at the next watch tick.
   */
  nodeCheckedIn(nodeNumber: NodeNumber): void {
    const daemon = this.daemons.get(nodeNumber);
    if (daemon !== undefined) void this.look(daemon, 'node_info');
  }

  /**
   * Runs `action` against the node unless it is down. Returns the action's result, or
   * undefined when the node was skipped or failed (the failure is logged, never thrown).
   */
  async tryOn<T>(
    nodeNumber: NodeNumber,
    what: string,
    action: (daemon: NodeDaemon) => Promise<T>,
  ): Promise<T | undefined> {
    const daemon = this.daemons.get(nodeNumber);
    if (daemon === undefined) {
      this.logger.warn({ nodeNumber }, `no node ${nodeNumber} is configured; ${what} left to the database`);
      return undefined;
    }
    if (this.isDown(nodeNumber)) {
      this.logger.debug({ nodeNumber }, `node ${nodeNumber} is unreachable; ${what} is applied as soon as it answers`);
      return undefined;
    }
    return this.call(daemon, what, action);
  }

  /**
   * Whether a node held for down answers `/i/node` within `withinMs` (then it is up again, and
   * reconciled): a revocation asks before leaving the node to its recovery pass, since the node
   * may be back before the probe noticed. Only this harmless question is sent, never the
   * revocation itself: a removal left in a hung node's socket would land after a later enable.
   */
  async glance(nodeNumber: NodeNumber, withinMs: number): Promise<boolean> {
    const daemon = this.daemons.get(nodeNumber);
    if (daemon === undefined) return false;
    if (!this.isDown(nodeNumber)) return true;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), withinMs);
    });
    try {
      return (await Promise.race([this.attempt(daemon, 'glance', (node) => node.nodeInfo()), late])) !== undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A listing's question (`what` names it, and so the type of its answer): the node's answer
   * now, or, while it is down or when it fails, the last answer it gave, marked stale. A node
   * held for down is not asked.
   */
  async current<T>(
    nodeNumber: NodeNumber,
    what: string,
    action: (daemon: NodeDaemon) => Promise<T>,
  ): Promise<NodeAnswer<T>> {
    const state = this.states.get(nodeNumber);
    const answer = await this.tryOn(nodeNumber, what, async (daemon) => ({ fresh: await action(daemon) }));
    if (answer !== undefined) {
      state?.lastAnswers.set(what, answer.fresh);
      return { stale: false, answer: answer.fresh };
    }
    return { stale: true, answer: state?.lastAnswers.get(what) as T | undefined };
  }

  /**
   * Like tryOn, but always contacts the node and waits for its answer (the reconcile pass and
   * the probe). Only a node that does not answer is held for down; one that answers with an error
   * is up, and the failure is logged and left to whoever asked.
   */
  async attempt<T>(
    daemon: NodeDaemon,
    what: string,
    action: (daemon: NodeDaemon) => Promise<T>,
  ): Promise<T | undefined> {
    const sent = this.requests.get(daemon.nodeNumber) ?? new Map<string, number>();
    this.requests.set(daemon.nodeNumber, sent.set(what, (sent.get(what) ?? 0) + 1));
    try {
      const result = await action(daemon);
      this.markUp(daemon.nodeNumber);
      this.states.get(daemon.nodeNumber)?.overLimit.delete(what);
      return result;
    } catch (error) {
      if (error instanceof ListingTooLargeError) {
        this.markUp(daemon.nodeNumber);
        this.listingOverLimit(daemon.nodeNumber, what, error);
        return undefined;
      }
      if (error instanceof NodeDaemonError && error.answered) {
        this.markUp(daemon.nodeNumber);
        this.logger.warn(
          { nodeNumber: daemon.nodeNumber },
          `${what} on node ${daemon.nodeNumber} failed: ${error.message}`,
        );
        return undefined;
      }
      this.markDown(daemon.nodeNumber, what, error);
      return undefined;
    }
  }

  /**
   * A listing longer than the portal reads: said at error level (again every ten minutes while it
   * lasts), in the metrics and on the console, since the node is left as it is until it lists less.
   */
  private listingOverLimit(nodeNumber: NodeNumber, what: string, error: ListingTooLargeError): void {
    const state = this.states.get(nodeNumber);
    const now = this.clock.now();
    const known = state?.overLimit.get(what);
    // Measured on the monotonic clock: a wall clock set back would silence the error for as long.
    if (known !== undefined && elapsedSince(known.loggedAt) < OVER_LIMIT_REPEAT_MS) {
      this.logger.debug({ nodeNumber }, `${what} on node ${nodeNumber} failed: ${error.message}`);
      return;
    }
    state?.overLimit.set(what, { limitBytes: error.limitBytes, since: known?.since ?? now, loggedAt: monotonicNow() });
    this.logger.error(
      { nodeNumber, listing: what, limitBytes: error.limitBytes },
      `${what} on node ${nodeNumber} failed: ${error.message}. The node holds more than the portal can list ` +
        `(some 150,000 typical WireGuard peers): it is not reconciled, and revocations waiting on it are not ` +
        `confirmed, until it holds fewer (docs/nodes.md, capacity)`,
    );
  }

  /** An Admin API call's request: it stops waiting as soon as the node is marked down, by whichever call failed first. */
  private async call<T>(
    daemon: NodeDaemon,
    what: string,
    action: (daemon: NodeDaemon) => Promise<T>,
  ): Promise<T | undefined> {
    const state = this.states.get(daemon.nodeNumber);
    let refused = false;
    const result = await this.attempt(
      daemon,
      what,
      (node) =>
        new Promise<T>((resolve, reject) => {
          state?.waiting.add(reject);
          action(node)
            .then(resolve, (error: unknown) => {
              refused = error instanceof NodeDaemonError && error.answered;
              reject(error);
            })
            .finally(() => state?.waiting.delete(reject));
        }),
    );
    // The database holds what the call changed: a reconcile pass of the node brings it in line
    // now, rather than at the next interval (a pass's own failures ask for nothing, so a node
    // that keeps refusing cannot start a loop).
    if (refused) this.reconcileListener(daemon.nodeNumber, 'refused a change');
    return result;
  }

  private async watchAll(): Promise<void> {
    await Promise.all(
      [...this.daemons.values()]
        .filter((daemon) => !this.isDown(daemon.nodeNumber))
        .map((daemon) => this.look(daemon, 'node_info')),
    );
  }

  private async probeDown(): Promise<void> {
    await Promise.all(
      [...this.daemons.values()]
        .filter((daemon) => this.isDown(daemon.nodeNumber))
        .map((daemon) => this.look(daemon, 'probe')),
    );
  }

  /** Asks the node for its info; notices a node that came back or lost its peers. */
  private async look(daemon: NodeDaemon, what: string): Promise<void> {
    const state = this.states.get(daemon.nodeNumber);
    if (state === undefined || state.probing || this.stopped) return;
    state.probing = true;
    try {
      const info = await this.attempt(daemon, what, (node) => node.nodeInfo());
      if (info === undefined || this.stopped) return;
      const previous = state.lastInfo;
      state.lastInfo = info;
      await this.noticeNat(daemon.nodeNumber, info.nat);
      if (previous !== null && previous.maintenanceMode !== info.maintenanceMode) {
        this.logger.info(
          { nodeNumber: daemon.nodeNumber, maintenanceMode: info.maintenanceMode },
          `node ${daemon.nodeNumber} ${info.maintenanceMode ? 'is in maintenance: no new configurations go there' : 'left maintenance'}`,
        );
      }
      if (previous !== null && lostItsPeers(previous, info)) {
        this.logger.warn(
          { nodeNumber: daemon.nodeNumber },
          `node ${daemon.nodeNumber} restarted and lost its peers; reconciling it now`,
        );
        this.reconcileListener(daemon.nodeNumber, 'lost its peers');
      }
    } finally {
      state.probing = false;
    }
  }

  private markUp(nodeNumber: NodeNumber): void {
    const state = this.states.get(nodeNumber);
    if (state === undefined || state.downSince === null) return;
    state.downSince = null;
    this.logger.info({ nodeNumber }, `node ${nodeNumber} answers again`);
    this.stateListener({ nodeNumber, up: true });
    this.reconcileListener(nodeNumber, 'answers again');
  }

  private markDown(nodeNumber: NodeNumber, what: string, error: unknown): void {
    const state = this.states.get(nodeNumber);
    if (state === undefined) return;
    const first = state.downSince === null;
    const message = error instanceof Error ? error.message : String(error);
    if (first) {
      state.downSince = this.clock.now().getTime();
      const released = new Error(`node ${nodeNumber} is held for down after ${what} failed: ${message}`);
      for (const stopWaiting of state.waiting) stopWaiting(released);
      state.waiting.clear();
    }
    // Log a node going down once as a warning; repeats while it stays down only at debug level.
    this.logger[first ? 'warn' : 'debug']({ nodeNumber }, `${what} on node ${nodeNumber} failed: ${message}`);
    if (first) this.stateListener({ nodeNumber, up: false, reason: `${what}: ${message}` });
  }
}

/** Whether the node's peer set is not the one seen before: a new agent instance, or a reboot. */
function lostItsPeers(previous: DaemonNodeInfo, current: DaemonNodeInfo): boolean {
  if (previous.instanceId !== null || current.instanceId !== null) return previous.instanceId !== current.instanceId;
  return current.nodeUptime < previous.nodeUptime;
}
