// Row ids that sort in the order they were made (UUID version 7, RFC 9562): a listing ordered
// by time can break ties by id and still say truly which came first.
import { randomBytes } from 'node:crypto';

let lastMillis = -1;
let sequence = 0;

/**
 * A UUIDv7: 48 bits of Unix milliseconds, then a 12-bit counter that keeps ids made within one
 * millisecond of this process in order, then random bits.
 */
export function timeOrderedId(now: number = Date.now()): string {
  if (now > lastMillis) {
    lastMillis = now;
    sequence = 0;
  } else {
    // The same millisecond (or a clock that stepped back): count on from the last id.
    sequence += 1;
    if (sequence > 0xfff) {
      lastMillis += 1;
      sequence = 0;
    }
  }
  const bytes = randomBytes(16);
  bytes.writeUIntBE(lastMillis, 0, 6);
  bytes[6] = 0x70 | (sequence >> 8);
  bytes[7] = sequence & 0xff;
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
