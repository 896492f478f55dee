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

/**
 * The id to make now when it must sort after `earlier`, an id another process may have made
 * (whose clock may run ahead): a fresh id when that already does, else `earlier`'s millisecond
 * and counter, counted on by one. This process's own sequence is left as it was, so the ids it
 * makes for anything else still carry its own clock's time.
 */
export function timeOrderedIdAfter(earlier: string, now: number = Date.now()): string {
  const fresh = timeOrderedId(now);
  if (fresh > earlier) return fresh;
  const millis = Number.parseInt(earlier.slice(0, 8) + earlier.slice(9, 13), 16);
  const counter = Number.parseInt(earlier.slice(15, 18), 16) + 1;
  const [time, next] = counter > 0xfff ? [millis + 1, 0] : [millis, counter];
  const hex = time.toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8)}-${(0x7000 | next).toString(16)}-${fresh.slice(19)}`;
}
