import { createHash, timingSafeEqual } from 'node:crypto';
import type { Secret } from './secret.js';

/**
 * Checks `Authorization: Bearer <secret>` in constant time. Both sides are hashed first, so
 * the comparison is always between equal-length buffers and leaks not even the length.
 */
export function createBearerCheck(secret: Secret): (authorization: string | undefined) => boolean {
  const expected = sha256(secret.reveal());
  return (authorization) => {
    const match = /^Bearer (.+)$/i.exec(authorization ?? '');
    const presented = sha256(match?.[1] ?? '');
    // Always compare, even without a token, so a missing header costs the same time.
    return timingSafeEqual(presented, expected) && match !== null;
  };
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
