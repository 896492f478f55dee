// The vpn-daemon protocol's only credential: the node secret as a Bearer token.
import { constantTimeMatcher } from '../../shared/constant-time.js';
import type { Secret } from '../../shared/secret.js';

/** Checks `Authorization: Bearer <secret>` in constant time (the word "Bearer" in any letter case). */
export function createBearerCheck(secret: Secret): (authorization: string | undefined) => boolean {
  const matchesSecret = constantTimeMatcher(secret.reveal());
  return (authorization) => {
    const match = /^Bearer (.+)$/i.exec(authorization ?? '');
    // Always compare, even without a token, so a missing header costs the same time.
    return matchesSecret(match?.[1] ?? '') && match !== null;
  };
}
