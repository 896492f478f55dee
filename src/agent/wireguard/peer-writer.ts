// Writes a batch's peer changes to the interface: through wireguard-go's control socket when the
// interface has one (no process to start), else with `wg set` (kernel WireGuard).
import {
  ControlSocketAbsentError,
  ControlSocketError,
  controlSocketPath,
  sendOperation,
  setOperations,
  WIREGUARD_SOCKET_DIRECTORY,
} from './control-socket.js';
import type { PeerChange, WgTool } from './wg-tool.js';

/** How changes reached the interface: set operations on the control socket, or `wg set` processes. */
export type PeerWriteMethod = 'uapi' | 'wg';

export interface PeerWrites {
  readonly method: PeerWriteMethod;
  /** Set operations sent, or `wg` processes started. */
  readonly writes: number;
}

export interface PeerWriterOptions {
  readonly wg: Pick<WgTool, 'applyPeerChanges'>;
  /** False: always `wg set`, also for wireguard-go (tests take that path on purpose). */
  readonly controlSocket?: boolean;
  readonly socketDirectory?: string;
  /** A set operation holds wireguard-go's configuration lock while it runs: keep each one short. */
  readonly maxOperationBytes?: number;
  readonly timeoutMs?: number;
}

// As much as one `wg set` takes on its command line: a few hundred peers per operation.
const DEFAULT_MAX_OPERATION_BYTES = 64 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;

/** Writes peer changes to one node's interface and counts the writes, by method. */
export class PeerWriter {
  readonly #wg: PeerWriterOptions['wg'];
  readonly #controlSocket: boolean;
  readonly #socketDirectory: string;
  readonly #maxOperationBytes: number;
  readonly #timeoutMs: number;
  readonly #writes: Record<PeerWriteMethod, number> = { uapi: 0, wg: 0 };
  /**
   * Set operations sent but not answered in time, which wireguard-go may still apply: settles
   * once each was answered (or wireguard-go went away). Null while there are none.
   */
  #unanswered: Promise<void> | null = null;
  #unansweredSoFar = 0;

  constructor(options: PeerWriterOptions) {
    this.#wg = options.wg;
    this.#controlSocket = options.controlSocket ?? true;
    this.#socketDirectory = options.socketDirectory ?? WIREGUARD_SOCKET_DIRECTORY;
    this.#maxOperationBytes = options.maxOperationBytes ?? DEFAULT_MAX_OPERATION_BYTES;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** Writes that succeeded since start, by method (the agent's metrics). */
  get writes(): Readonly<Record<PeerWriteMethod, number>> {
    return this.#writes;
  }

  /** Whether a set operation is left unanswered now (see settled()). */
  get unanswered(): boolean {
    return this.#unanswered !== null;
  }

  /** How many set operations were ever left unanswered (a read that saw this number change may predate one of them). */
  get unansweredSoFar(): number {
    return this.#unansweredSoFar;
  }

  /**
   * Resolves once no set operation is left unanswered, so that what is written or read next
   * comes after it: a removal written, or a read taken, before a late add would be undone by
   * it. Fails when one is still unanswered after the write timeout (wireguard-go still hangs).
   */
  async settled(): Promise<void> {
    const unanswered = this.#unanswered;
    if (unanswered === null) return;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), this.#timeoutMs);
    });
    const late = await Promise.race([unanswered.then(() => false), timedOut]);
    clearTimeout(timer);
    if (late)
      throw new ControlSocketError(
        `an earlier change is still unanswered after ${this.#timeoutMs} ms; nothing more is written or read until it is`,
      );
  }

  /**
   * Applies the changes, in order; fails when any write fails (earlier operations of the batch
   * may have been applied, as with several `wg set` calls).
   */
  async apply(interfaceName: string, changes: readonly PeerChange[]): Promise<PeerWrites> {
    await this.settled();
    if (this.#controlSocket) {
      const written = await this.#applyOverControlSocket(interfaceName, changes);
      if (written !== null) return written;
    }
    const writes = await this.#wg.applyPeerChanges(interfaceName, changes);
    this.#writes.wg += writes;
    return { method: 'wg', writes };
  }

  /** Null when the interface has no live control socket (nothing was written). */
  async #applyOverControlSocket(interfaceName: string, changes: readonly PeerChange[]): Promise<PeerWrites | null> {
    const path = controlSocketPath(this.#socketDirectory, interfaceName);
    const operations = setOperations(changes, this.#maxOperationBytes);
    for (const [index, operation] of operations.entries()) {
      try {
        await sendOperation(path, operation, this.#timeoutMs, (answeredOrGone) => this.#leftUnanswered(answeredOrGone));
      } catch (error) {
        // Only before the first write: a socket that vanishes halfway fails the batch.
        if (index === 0 && error instanceof ControlSocketAbsentError) return null;
        throw error;
      }
      this.#writes.uapi++;
    }
    return { method: 'uapi', writes: operations.length };
  }

  #leftUnanswered(answeredOrGone: Promise<void>): void {
    this.#unansweredSoFar++;
    const all: Promise<void> = Promise.all([this.#unanswered, answeredOrGone]).then(() => {
      if (this.#unanswered === all) this.#unanswered = null;
    });
    this.#unanswered = all;
  }
}
