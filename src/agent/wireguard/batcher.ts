// Applies peer changes in batches: thousands of add_peer calls in a reconcile become a handful of
// writes to the interface.
import type { Logger } from 'pino';
import type { WireGuardKey } from '../../shared/ids.js';
import { planPeerBatch, type PeerRequest, type PeerRequestResult } from './batch-plan.js';
import type { WgPeer } from './dump.js';
import type { PeerView } from './peer-view.js';
import type { PeerWriter } from './peer-writer.js';

interface PendingRequest {
  readonly request: PeerRequest;
  readonly resolve: (result: PeerRequestResult) => void;
  readonly reject: (error: unknown) => void;
}

export interface PeerBatcherOptions {
  readonly interfaceName: string;
  /** What the interface holds (for removals' answers), told of every change written. */
  readonly peers: Pick<PeerView, 'recent' | 'applied' | 'forget'>;
  readonly writer: Pick<PeerWriter, 'apply'>;
  readonly logger: Logger;
  /** A batch is applied once no new request arrived for this long… */
  readonly quietMs?: number;
  /** …or once its first request has waited this long, whichever comes first… */
  readonly maxWaitMs?: number;
  /** …or at once when this many requests wait. */
  readonly maxRequests?: number;
}

// A group commit more than a gathering: a request waits at most a couple of milliseconds for
// others, and what arrives during a write goes right after it. Bursts of adds come in add_peers
// requests (one request, many peers), and a write of a few peers to wireguard-go takes 1–2 ms even
// at 65,533 peers, so waiting longer only delayed each removal of a bulk revocation (5 and 50 ms
// before: bench/README.md, 30 November).
const DEFAULT_QUIET_MS = 1;
const DEFAULT_MAX_WAIT_MS = 2;
// Half of what the portal keeps in flight (MAX_CONNECTIONS_PER_NODE): while one half is
// written, the agent receives the other, instead of receiving everything and then writing.
const DEFAULT_MAX_REQUESTS = 128;

/**
 * Coalesces concurrent add/remove requests into one write to the interface (a few when the
 * batch is large). Batches run one after another, in arrival order; each request settles when
 * the batch holding it has been applied, or fails with that batch.
 */
export class PeerBatcher {
  readonly #interfaceName: string;
  readonly #peers: PeerBatcherOptions['peers'];
  readonly #writer: PeerBatcherOptions['writer'];
  readonly #logger: Logger;
  readonly #quietMs: number;
  readonly #maxWaitMs: number;
  readonly #maxRequests: number;
  #queue: PendingRequest[] = [];
  #timer: NodeJS.Timeout | null = null;
  /** When the oldest and the newest waiting request arrived (performance.now()). */
  #oldestArrival = 0;
  #newestArrival = 0;
  #running: Promise<void> | null = null;
  /** How long the last batch's write to the interface took (reading the peers not counted). */
  #lastWriteMs = 0;
  /** When the last batch was settled (performance.now()); minus infinity before the first. */
  #lastSettledAtMs = Number.NEGATIVE_INFINITY;

  constructor(options: PeerBatcherOptions) {
    this.#interfaceName = options.interfaceName;
    this.#peers = options.peers;
    this.#writer = options.writer;
    this.#logger = options.logger;
    this.#quietMs = options.quietMs ?? DEFAULT_QUIET_MS;
    this.#maxWaitMs = options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
    this.#maxRequests = options.maxRequests ?? DEFAULT_MAX_REQUESTS;
  }

  async add(publicKey: WireGuardKey, allowedIps: readonly string[], endpoint?: string): Promise<void> {
    await this.#submit({ kind: 'add', publicKey, allowedIps, ...(endpoint === undefined ? {} : { endpoint }) });
  }

  /** Resolves with the peer as it was just before its removal, or null when it was absent. */
  async remove(publicKey: WireGuardKey): Promise<WgPeer | null> {
    const result = await this.#submit({ kind: 'remove', publicKey });
    return result.kind === 'removed' ? result.peer : null;
  }

  /** The last moment the batcher had work (performance.now()): now while a request waits or a batch is written. */
  get busyAtMs(): number {
    return this.#running !== null || this.#queue.length > 0 ? performance.now() : this.#lastSettledAtMs;
  }

  /** Waits until every request submitted so far has been applied (used at shut-down). */
  async drain(): Promise<void> {
    while (this.#running !== null || this.#queue.length > 0) {
      if (this.#running === null) {
        if (this.#timer !== null) clearTimeout(this.#timer);
        this.#flush();
      }
      await this.#running;
    }
  }

  #submit(request: PeerRequest): Promise<PeerRequestResult> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ request, resolve, reject });
      this.#schedule();
    });
  }

  // Requests of a burst (a portal reconciling thousands of peers) arrive spread over time, not
  // at once: waiting for a short quiet moment, up to a bound, gathers them into few batches.
  // Requests that arrive while a batch is written wait for that write (see #flush).
  #schedule(): void {
    if (this.#running !== null) return;
    const now = performance.now();
    this.#newestArrival = now;
    if (this.#queue.length >= this.#maxRequests) {
      if (this.#timer !== null) clearTimeout(this.#timer);
      this.#flush();
      return;
    }
    if (this.#timer !== null) return;
    this.#oldestArrival = now;
    this.#arm(now);
  }

  /** One timer per batch, moved on only when it fires early (not one per request: thousands arrive). */
  #arm(now: number): void {
    this.#timer = setTimeout(
      () => {
        const firedAt = performance.now();
        // Timers count whole milliseconds: a fraction early counts as due.
        if (firedAt + 1 < this.#dueAt()) this.#arm(firedAt);
        else this.#flush();
      },
      Math.max(0, this.#dueAt() - now),
    );
  }

  /** A quiet moment after the newest waiting request, or the bound after the oldest. */
  #dueAt(): number {
    return Math.min(this.#newestArrival + this.#quietMs, this.#oldestArrival + this.#maxWaitMs);
  }

  #flush(): void {
    this.#timer = null;
    const batch = this.#queue;
    this.#queue = [];
    this.#running = this.#apply(batch).finally(() => {
      this.#running = null;
      this.#lastSettledAtMs = performance.now();
      if (this.#queue.length === 0) return;
      // A write that took longer than a quiet moment makes the interface the slow step: what
      // arrived meanwhile goes at once, while the answered callers send their next requests
      // (receiving overlaps writing). After a quick write, requests are gathered as usual.
      if (this.#lastWriteMs >= this.#quietMs) this.#flush();
      else this.#schedule();
    });
  }

  async #apply(batch: readonly PendingRequest[]): Promise<void> {
    try {
      const requests = batch.map((pending) => pending.request);
      // The current peers are only needed to answer removals, so add-only batches skip them.
      const needsCurrentPeers = requests.some((request) => request.kind === 'remove');
      const currentPeers = needsCurrentPeers ? await this.#peers.recent() : new Map<WireGuardKey, WgPeer>();

      const plan = planPeerBatch(requests, currentPeers);
      const writeStarted = performance.now();
      this.#lastWriteMs = 0;
      let written: Awaited<ReturnType<PeerWriter['apply']>> | null = null;
      if (plan.changes.length > 0) {
        try {
          written = await this.#writer.apply(this.#interfaceName, plan.changes);
        } catch (error) {
          this.#peers.forget();
          throw error;
        }
        this.#peers.applied(plan.changes);
      }
      this.#lastWriteMs = performance.now() - writeStarted;

      this.#logger.info(
        {
          requests: batch.length,
          peersSet: plan.changes.filter((change) => change.kind === 'set').length,
          peersRemoved: plan.changes.filter((change) => change.kind === 'remove').length,
          method: written?.method ?? null,
          writes: written?.writes ?? 0,
        },
        'applied peer batch',
      );
      batch.forEach((pending, index) => {
        const result = plan.results[index];
        if (result === undefined) pending.reject(new Error('peer batch produced no result for a request'));
        else pending.resolve(result);
      });
    } catch (error) {
      this.#logger.error({ err: error, requests: batch.length }, 'peer batch failed');
      for (const pending of batch) pending.reject(error);
    }
  }
}
