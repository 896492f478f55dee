// UoTLV/1 framing ("UDP over TCP, Length Value"), as ProxyGuard speaks it after the HTTP
// upgrade: every datagram travels as a 2-byte length in network byte order (big-endian)
// followed by the datagram itself, in both directions.

export const LENGTH_PREFIX_BYTES = 2;

/**
 * The largest datagram the relay can forward: the biggest UDP payload over IPv4
 * (65,535 − 20 bytes IP header − 8 bytes UDP header), since it sends to 127.0.0.1. A frame
 * declaring more could never be delivered, so it is a protocol error, like an empty frame.
 */
export const MAX_DATAGRAM_BYTES = 65_507;

export interface DecodeResult {
  /** Whole datagrams, in order; those before a bad frame are still good. */
  readonly datagrams: readonly Buffer[];
  /** Set once a length prefix is 0 or too large; the stream is unusable from there on. */
  readonly error: string | null;
}

/** One frame ready to write: the length prefix and a copy of the datagram. */
export function encodeFrame(datagram: Uint8Array): Buffer {
  if (datagram.length === 0 || datagram.length > MAX_DATAGRAM_BYTES) {
    throw new RangeError(`a datagram of ${datagram.length} bytes cannot be framed (1 to ${MAX_DATAGRAM_BYTES})`);
  }
  const frame = Buffer.allocUnsafe(LENGTH_PREFIX_BYTES + datagram.length);
  frame.writeUInt16BE(datagram.length, 0);
  frame.set(datagram, LENGTH_PREFIX_BYTES);
  return frame;
}

/**
 * Splits a TCP byte stream back into datagrams, however the stream was cut into chunks.
 * The first bad length prefix ends the stream for good: after it, nothing can be trusted.
 */
export class FrameDecoder {
  readonly #maxDatagramBytes: number;
  #pending: Buffer = Buffer.alloc(0);
  #error: string | null = null;

  constructor(maxDatagramBytes: number = MAX_DATAGRAM_BYTES) {
    this.#maxDatagramBytes = maxDatagramBytes;
  }

  /** Bytes received but not yet a whole frame (at most one frame's worth). */
  get pendingBytes(): number {
    return this.#pending.length;
  }

  push(chunk: Buffer): DecodeResult {
    if (this.#error !== null) return { datagrams: [], error: this.#error };
    const buffer = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    const datagrams: Buffer[] = [];
    let offset = 0;
    while (buffer.length - offset >= LENGTH_PREFIX_BYTES) {
      const length = buffer.readUInt16BE(offset);
      // Checked as soon as the prefix arrives: an oversized frame is never buffered.
      if (length === 0) return this.#fail(datagrams, 'empty frame (length prefix 0)');
      if (length > this.#maxDatagramBytes)
        return this.#fail(datagrams, `frame of ${length} bytes exceeds the ${this.#maxDatagramBytes}-byte limit`);
      if (buffer.length - offset - LENGTH_PREFIX_BYTES < length) break;
      const start = offset + LENGTH_PREFIX_BYTES;
      datagrams.push(buffer.subarray(start, start + length));
      offset = start + length;
    }
    // Copied, so a large chunk is not kept alive by a few trailing bytes.
    this.#pending = offset === buffer.length ? Buffer.alloc(0) : Buffer.from(buffer.subarray(offset));
    return { datagrams, error: null };
  }

  #fail(datagrams: readonly Buffer[], error: string): DecodeResult {
    this.#error = error;
    this.#pending = Buffer.alloc(0);
    return { datagrams, error };
  }
}
