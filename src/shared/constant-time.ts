// Secrets (the Admin API key, node keys) are compared so that the time taken tells an attacker
// nothing about how much of a guess was right.
import { createHash, timingSafeEqual } from 'node:crypto';

/** Compares secrets in constant time; hashing first hides the length of the secret too. */
export function constantTimeEquals(presented: string, secret: string): boolean {
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(secret).digest();
  return timingSafeEqual(a, b);
}
