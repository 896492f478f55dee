// Row ids that sort in the order they were made (UUID version 7, RFC 9562): a listing ordered
// by time can break ties by id and still say truly which came first.
import { randomUUID } from 'node:crypto';

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
  const time = lastMillis.toString(16).padStart(12, '0');
  const counter = (0x7000 | sequence).toString(16);
  // The random part is a UUIDv4's last 64 bits, which carry the same variant bits (10xx): Node
  // makes those from a pool of random bytes, at a seventh of the cost of a randomBytes call.
  return `${time.slice(0, 8)}-${time.slice(8)}-${counter}-${randomUUID().slice(19)}`;
}
