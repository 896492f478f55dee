// The portal's view of its nodes. Changes are pushed to a node at once; when a node cannot
// be reached the change stays in the database (the source of truth) and the reconcile pass
// applies it later, so a node outage never fails an Admin API call. After a failure the
// node is left alone for a short back-off, so a dead node does not slow every request.
import type { Logger } from 'pino';
import type { NodeNumber } from './ids.js';
import type { Clock } from './time.js';
import type { NodeDaemon } from '../node/daemon-client.js';

const RETRY_AFTER_MS = 5_000;

export class NodeFleet {
  private readonly downSince = new Map<NodeNumber, number>();
  private recoveredListener: (nodeNumber: NodeNumber) => void = () => {};

  constructor(
    private readonly daemons: ReadonlyMap<NodeNumber, NodeDaemon>,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  daemon(nodeNumber: NodeNumber): NodeDaemon | undefined {
    return this.daemons.get(nodeNumber);
  }

  all(): NodeDaemon[] {
    return [...this.daemons.values()];
  }

  /** Called when a node answers again after a failure (the portal reconciles it then). */
  onRecovered(listener: (nodeNumber: NodeNumber) => void): void {
    this.recoveredListener = listener;
  }

  /** Whether the last contact with the node failed within the back-off window. */
  isBackingOff(nodeNumber: NodeNumber): boolean {
    const since = this.downSince.get(nodeNumber);
    return since !== undefined && this.clock.now().getTime() - since < RETRY_AFTER_MS;
  }

  /**
   * Runs `action` against the node unless it is backing off. Returns the action's result, or
   * undefined when the node was skipped or failed (the failure is logged, never thrown).
   */
  async tryOn<T>(nodeNumber: NodeNumber, what: string, action: (daemon: NodeDaemon) => Promise<T>): Promise<T | undefined> {
    const daemon = this.daemons.get(nodeNumber);
    if (daemon === undefined) {
      this.logger.warn({ nodeNumber }, `no node ${nodeNumber} is configured; ${what} left to the database`);
      return undefined;
    }
    if (this.isBackingOff(nodeNumber)) {
      this.logger.debug({ nodeNumber }, `node ${nodeNumber} is unreachable; ${what} will be applied by the next reconcile`);
      return undefined;
    }
    return this.attempt(daemon, what, action);
  }

  /** Like tryOn, but always contacts the node (used by reconcile and listings, which probe). */
  async attempt<T>(daemon: NodeDaemon, what: string, action: (daemon: NodeDaemon) => Promise<T>): Promise<T | undefined> {
    try {
      const result = await action(daemon);
      this.markUp(daemon.nodeNumber);
      return result;
    } catch (error) {
      this.markDown(daemon.nodeNumber, what, error);
      return undefined;
    }
  }

  private markUp(nodeNumber: NodeNumber): void {
    if (this.downSince.delete(nodeNumber)) {
      this.logger.info({ nodeNumber }, `node ${nodeNumber} answers again`);
      this.recoveredListener(nodeNumber);
    }
  }

  private markDown(nodeNumber: NodeNumber, what: string, error: unknown): void {
    const first = !this.downSince.has(nodeNumber);
    this.downSince.set(nodeNumber, this.clock.now().getTime());
    const message = error instanceof Error ? error.message : String(error);
    // Log a node going down once as a warning; repeats while it stays down only at debug level.
    this.logger[first ? 'warn' : 'debug']({ nodeNumber }, `${what} on node ${nodeNumber} failed: ${message}`);
  }
}
