// The text of an enrollment token: `vpe_<id>_<secret><checksum>` (src/keys/prefixed-token.ts),
// so a leaked one is recognised by secret scanners and a mistyped one refused without a
// database lookup. Its keyed hash is stored under the admin keys' pepper; the prefix keeps the
// two kinds apart (an admin key is never an enrollment token, nor the other way round).
import { hashPrefixedToken, newPrefixedToken, parsePrefixedToken, prefixedTokenPattern } from './prefixed-token.js';

export const ENROLLMENT_TOKEN_PREFIX = 'vpe_';
export const ENROLLMENT_TOKEN_PATTERN = prefixedTokenPattern(ENROLLMENT_TOKEN_PREFIX);

export interface NewEnrollmentToken {
  readonly tokenId: string;
  /** The whole token, shown once. */
  readonly token: string;
}

export function newEnrollmentToken(): NewEnrollmentToken {
  const { id, token } = newPrefixedToken(ENROLLMENT_TOKEN_PREFIX);
  return { tokenId: id, token };
}

/** The row a presented token names; null when it is no enrollment token (wrong form or checksum). */
export function enrollmentTokenId(token: string): string | null {
  const parsed = parsePrefixedToken(ENROLLMENT_TOKEN_PREFIX, token);
  return parsed.kind === 'token' ? parsed.id : null;
}

export function hashEnrollmentToken(pepper: Buffer, token: string): string {
  return hashPrefixedToken(pepper, token);
}
