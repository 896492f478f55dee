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
 * A frame that is whole within a chunk is handed on as a view of that chunk. An unfinished one
 * is copied, as its bytes arrive, into a buffer of the length its prefix declared: each byte is
 * copied once, and a frame trickling in a byte per read holds its own length in memory, not a
 * buffer object of some 200 bytes per read.
 */
export class FrameDecoder {
  readonly #maxDatagramBytes: number;
  /** The next frame's length prefix, while only its first byte has arrived. */
  readonly #prefix = Buffer.alloc(LENGTH_PREFIX_BYTES);
  #prefixFilled = 0;
  /** The unfinished frame's datagram, allocated once its length is known; null between frames. */
  #partial: Buffer | null = null;
  #partialFilled = 0;
  #error: string | null = null;

  constructor(maxDatagramBytes: number = MAX_DATAGRAM_BYTES) {
    this.#maxDatagramBytes = maxDatagramBytes;
  }

  /** Bytes received but not yet a whole frame (at most one frame's worth). */
  get pendingBytes(): number {
    return this.#prefixFilled + (this.#partial === null ? 0 : LENGTH_PREFIX_BYTES + this.#partialFilled);
  }

  push(chunk: Buffer): DecodeResult {
    if (this.#error !== null) return { datagrams: [], error: this.#error };
    const datagrams: Buffer[] = [];
    let offset = 0;
    while (offset < chunk.length) {
      if (this.#partial !== null) {
        offset = this.#fillPartial(this.#partial, chunk, offset, datagrams);
        continue;
      }
      let length: number;
      if (this.#prefixFilled === 0 && chunk.length - offset >= LENGTH_PREFIX_BYTES) {
        length = chunk.readUInt16BE(offset);
        offset += LENGTH_PREFIX_BYTES;
      } else {
        this.#prefix[this.#prefixFilled] = chunk[offset] ?? 0;
        this.#prefixFilled += 1;
        offset += 1;
        if (this.#prefixFilled < LENGTH_PREFIX_BYTES) continue;
        length = this.#prefix.readUInt16BE(0);
        this.#prefixFilled = 0;
      }
      // Checked as soon as the prefix arrives: an oversized frame is never buffered.
      if (length === 0) return this.#fail(datagrams, 'empty frame (length prefix 0)');
      if (length > this.#maxDatagramBytes)
        return this.#fail(datagrams, `frame of ${length} bytes exceeds the ${this.#maxDatagramBytes}-byte limit`);
      if (chunk.length - offset >= length) {
        datagrams.push(chunk.subarray(offset, offset + length));
        offset += length;
      } else {
        this.#partial = Buffer.allocUnsafe(length);
      }
    }
    return { datagrams, error: null };
  }

  /** Copies what `chunk` holds of the unfinished frame; answers the offset after it. */
  #fillPartial(partial: Buffer, chunk: Buffer, offset: number, datagrams: Buffer[]): number {
    const end = Math.min(chunk.length, offset + partial.length - this.#partialFilled);
    this.#partialFilled += chunk.copy(partial, this.#partialFilled, offset, end);
    if (this.#partialFilled === partial.length) {
      datagrams.push(partial);
      this.#partial = null;
      this.#partialFilled = 0;
    }
    return end;
  }

  #fail(datagrams: readonly Buffer[], error: string): DecodeResult {
    this.#error = error;
    this.#prefixFilled = 0;
    this.#partial = null;
    this.#partialFilled = 0;
    return { datagrams, error };
  }
}
