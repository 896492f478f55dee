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
 * Chunks of an unfinished frame are only collected and joined once the frame is whole, so a
 * frame that arrives a byte at a time costs linear work, not a copy of everything so far per byte.
 */
export class FrameDecoder {
  readonly #maxDatagramBytes: number;
  /** Bytes received but not yet a whole frame, as they arrived. */
  #chunks: Buffer[] = [];
  #pendingLength = 0;
  #error: string | null = null;

  constructor(maxDatagramBytes: number = MAX_DATAGRAM_BYTES) {
    this.#maxDatagramBytes = maxDatagramBytes;
  }

  /** Bytes received but not yet a whole frame (at most one frame's worth). */
  get pendingBytes(): number {
    return this.#pendingLength;
  }

  push(chunk: Buffer): DecodeResult {
    if (this.#error !== null) return { datagrams: [], error: this.#error };
    if (chunk.length > 0) {
      this.#chunks.push(chunk);
      this.#pendingLength += chunk.length;
    }
    if (!this.#hasWholeFrameOrBadPrefix()) return { datagrams: [], error: null };
    const [first] = this.#chunks;
    const buffer = this.#chunks.length === 1 && first !== undefined ? first : Buffer.concat(this.#chunks);
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
    this.#chunks = offset === buffer.length ? [] : [Buffer.from(buffer.subarray(offset))];
    this.#pendingLength = buffer.length - offset;
    return { datagrams, error: null };
  }

  /** True once the first pending frame is complete, or its length prefix is already an error. */
  #hasWholeFrameOrBadPrefix(): boolean {
    if (this.#pendingLength < LENGTH_PREFIX_BYTES) return false;
    const length = (this.#byteAt(0) << 8) | this.#byteAt(1);
    return length === 0 || length > this.#maxDatagramBytes || this.#pendingLength >= LENGTH_PREFIX_BYTES + length;
  }

  /** A byte of the pending bytes; only ever the first two, so at most two chunks are looked at. */
  #byteAt(index: number): number {
    let rest = index;
    for (const chunk of this.#chunks) {
      if (rest < chunk.length) return chunk.readUInt8(rest);
      rest -= chunk.length;
    }
    throw new RangeError(`byte ${index} of ${this.#pendingLength} pending bytes`);
  }

  #fail(datagrams: readonly Buffer[], error: string): DecodeResult {
    this.#error = error;
    this.#chunks = [];
    this.#pendingLength = 0;
    return { datagrams, error };
  }
}
