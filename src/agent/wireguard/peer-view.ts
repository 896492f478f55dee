// The agent's view of its interface's peers. At wireguard-go's cap one full read (`wg show
// dump`) is 65,533 lines: most of a second of CPU in `wg` and here, and wireguard-go builds the
// whole listing for each reader, so concurrent reads pile up in its memory (an agent asked for
// /i/node every two seconds while restoring 65,533 peers had wireguard-go killed for 20 GB).
// So reads are shared: whoever asks while one runs gets the next one, started after the call,
// and none run side by side. Between reads the view follows the changes the agent writes, so a
// peer count or a removal's answer does not need a read of its own. A write that failed leaves
// the interface unknown: the view is dropped, and a read that was under way then is not kept.
import { appendAll } from '../../shared/append-all.js';
import type { WireGuardKey } from '../../shared/ids.js';
import { peerAfterSet } from './batch-plan.js';
import type { WgDump, WgPeer } from './dump.js';
import type { PeerWriter } from './peer-writer.js';
import type { PeerChange, WgTool } from './wg-tool.js';

export interface PeerViewOptions {
  readonly interfaceName: string;
  readonly wg: Pick<WgTool, 'dump'>;
  /**
   * The writer of the interface's peer changes: a read waits for a write wireguard-go left
   * unanswered (it may apply it after the read, and the read must not miss it).
   */
  readonly writes?: Pick<PeerWriter, 'settled' | 'unanswered' | 'unansweredSoFar'>;
  /** Milliseconds, monotonic. */
  readonly nowMs?: () => number;
}

/**
 * A read is reused for a removal's answer while it is younger than this many times the read's
 * own duration: a few milliseconds on a small interface (a fresh read, in effect)…
 */
const REUSE_FACTOR = 10;
/** …but a read that took this long (thousands of peers) is reused up to MAX_REUSE_MS… */
export const EXPENSIVE_READ_MS = 100;
/**
 * …and never longer than this: the byte counters a removal answers are at most this old. Longer
 * than the service waits between its own looks at its peers (at most 30 s, service.ts), so at
 * the cap removals never wait for a read: wireguard-go holds its configuration lock while it
 * writes a listing out (seconds on a busy machine), and every write waits for it. Reading ahead
 * of time instead (tried) kept the removals of a bulk revocation waiting too.
 */
const MAX_REUSE_MS = 40_000;

export class PeerView {
  readonly #interfaceName: string;
  readonly #wg: Pick<WgTool, 'dump'>;
  readonly #writes: PeerViewOptions['writes'];
  readonly #nowMs: () => number;
  /** The peers as last read, with the changes written since; null before the first read, and after forget() until a read begun after it. */
  #peers: Map<WireGuardKey, WgPeer> | null = null;
  #readStartedMs = Number.NEGATIVE_INFINITY;
  #readDurationMs = 0;
  #reading: Promise<WgDump> | null = null;
  /** The read that follows the running one, shared by everyone who asked meanwhile. */
  #next: Promise<WgDump> | null = null;
  /** Changes written while a read ran: it may not show them, so they are laid over its result. */
  #writtenDuringRead: PeerChange[] | null = null;
  /**
   * How often forget() was called. A read that began before a forget() may predate what the
   * failed write did (an add wireguard-go applied but did not confirm): it answers its callers
   * but does not become the view.
   */
  #timesForgotten = 0;

  constructor(options: PeerViewOptions) {
    this.#interfaceName = options.interfaceName;
    this.#wg = options.wg;
    this.#writes = options.writes;
    this.#nowMs = options.nowMs ?? (() => performance.now());
  }

  /** How long the last full read took, in milliseconds (0 before the first). */
  get lastReadDurationMs(): number {
    return this.#readDurationMs;
  }

  /** How many peers the interface holds, as far as the view knows; null while the view is empty (see #peers). */
  get count(): number | null {
    return this.#peers?.size ?? null;
  }

  /** A full read of the interface that started after this call. */
  read(): Promise<WgDump> {
    if (this.#next !== null) return this.#next;
    const running = this.#reading;
    if (running === null) return this.#start();
    const next = running
      .catch(() => undefined)
      .then(() => {
        this.#next = null;
        return this.#start();
      });
    this.#next = next;
    return next;
  }

  /** The peers, from a recent read (see REUSE_FACTOR) with the changes written since, or from a new read. */
  async recent(): Promise<ReadonlyMap<WireGuardKey, WgPeer>> {
    const age = this.#nowMs() - this.#readStartedMs;
    const reusable = this.#readDurationMs >= EXPENSIVE_READ_MS ? MAX_REUSE_MS : REUSE_FACTOR * this.#readDurationMs;
    if (this.#peers !== null && age <= reusable) return this.#peers;
    // A read not kept (a write failed while it ran) is not an answer: an empty or older map
    // would have a removal of a peer the interface holds left unwritten.
    for (;;) {
      await this.read();
      if (this.#peers !== null) return this.#peers;
    }
  }

  /** Changes the agent wrote to the interface. */
  applied(changes: readonly PeerChange[]): void {
    // A kernel interface's batch may be more than a call takes arguments.
    if (this.#writtenDuringRead !== null) appendAll(this.#writtenDuringRead, changes);
    if (this.#peers !== null) apply(this.#peers, changes);
  }

  /**
   * What the interface holds is unknown until the next read that starts from now (a write
   * failed, perhaps after wireguard-go applied it; or wireguard-go restarted).
   */
  forget(): void {
    this.#timesForgotten++;
    this.#peers = null;
    this.#readStartedMs = Number.NEGATIVE_INFINITY;
  }

  #start(): Promise<WgDump> {
    const started = this.#nowMs();
    const timesForgottenAtStart = this.#timesForgotten;
    this.#writtenDuringRead = [];
    const reading = this.#settledDump().then(
      ({ dump, durationMs }) => {
        this.#readDurationMs = durationMs;
        if (this.#timesForgotten !== timesForgottenAtStart) return dump;
        const peers = new Map(dump.peers.map((peer) => [peer.publicKey, peer] as const));
        apply(peers, this.#writtenDuringRead ?? []);
        this.#peers = peers;
        this.#readStartedMs = started;
        return dump;
      },
      (error: unknown) => {
        this.forget();
        throw error;
      },
    );
    this.#reading = reading;
    void reading
      .catch(() => undefined)
      .finally(() => {
        if (this.#reading !== reading) return;
        this.#reading = null;
        this.#writtenDuringRead = null;
      });
    return reading;
  }

  /**
   * A dump begun once no write is left unanswered, taken again when one was left unanswered while
   * it ran: wireguard-go may have answered the dump before it applied that write.
   */
  #settledDump(): Promise<{ readonly dump: WgDump; readonly durationMs: number }> {
    const writes = this.#writes;
    if (writes?.unanswered === true) return writes.settled().then(() => this.#settledDump());
    const unansweredBefore = writes?.unansweredSoFar ?? 0;
    const started = this.#nowMs();
    return this.#wg.dump(this.#interfaceName).then((dump) => {
      if ((writes?.unansweredSoFar ?? 0) !== unansweredBefore) return this.#settledDump();
      return { dump, durationMs: this.#nowMs() - started };
    });
  }
}

function apply(peers: Map<WireGuardKey, WgPeer>, changes: readonly PeerChange[]): void {
  for (const change of changes) {
    if (change.kind === 'remove') {
      peers.delete(change.publicKey);
      continue;
    }
    peers.set(change.publicKey, peerAfterSet(change, peers.get(change.publicKey)));
  }
}
