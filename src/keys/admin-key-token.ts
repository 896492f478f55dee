// The text of an admin key: `vpa_<id>_<secret><checksum>`, in the form every handed-around
// secret of the portal has (src/keys/prefixed-token.ts: prefix for secret scanners, CRC-32
// checksum, id naming the stored row, only a keyed hash stored).
import { hashPrefixedToken, newPrefixedToken, parsePrefixedToken, prefixedTokenPattern } from './prefixed-token.js';

export const ADMIN_KEY_PREFIX = 'vpa_';
/** What secret scanners can match: `vpa_` + 12 + `_` + 49 base-62 characters. */
export const ADMIN_KEY_PATTERN = prefixedTokenPattern(ADMIN_KEY_PREFIX);

export interface NewAdminKeyToken {
  /** The row's id, shown in listings. */
  readonly keyId: string;
  /** The whole key, shown once. */
  readonly token: string;
}

export function newAdminKeyToken(): NewAdminKeyToken {
  const { id, token } = newPrefixedToken(ADMIN_KEY_PREFIX);
  return { keyId: id, token };
}

export type ParsedAdminKeyToken =
  | { readonly kind: 'admin-key'; readonly keyId: string }
  | { readonly kind: 'bad-checksum' }
  | { readonly kind: 'not-an-admin-key' };

/** What a presented Bearer token is: an admin key (checksum correct), a damaged one, or something else (the secret). */
export function parseAdminKeyToken(token: string): ParsedAdminKeyToken {
  const parsed = parsePrefixedToken(ADMIN_KEY_PREFIX, token);
  if (parsed.kind === 'token') return { kind: 'admin-key', keyId: parsed.id };
  return parsed.kind === 'bad-checksum' ? parsed : { kind: 'not-an-admin-key' };
}

/** The stored form of a key: HMAC-SHA-256 under the pepper, hex. */
export function hashAdminKey(pepper: Buffer, token: string): string {
  return hashPrefixedToken(pepper, token);
}
