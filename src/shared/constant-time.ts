// Secrets (the Admin API key, node keys) are compared so that the time taken tells an attacker
// nothing about how much of a guess was right.
import { hash, timingSafeEqual } from 'node:crypto';

/** Compares secrets in constant time; hashing first hides the length of the secret too. */
export function constantTimeEquals(presented: string, secret: string): boolean {
  return constantTimeMatcher(secret)(presented);
}

/** constantTimeEquals against one secret, hashed once: for a check made on every request. */
export function constantTimeMatcher(secret: string): (presented: string) => boolean {
  const expected = sha256(secret);
  return (presented) => timingSafeEqual(sha256(presented), expected);
}

// One-shot: no Hash object per call (the node agent checks its secret on every request).
function sha256(text: string): Buffer {
  return hash('sha256', text, 'buffer');
}
