// The text of an admin key: `vpa_<id>_<secret><checksum>`. The prefix lets secret scanners
// (GitHub, GitLab, trufflehog) recognise a leaked key, and the CRC-32 checksum lets them — and
// the portal, before any database lookup — tell a real key from a random string, as GitHub's
// `ghp_` and NetBird's `nbp_` tokens do. The id is not secret: it names the stored row, so the
// secret part is checked against exactly one stored hash, in constant time. Only a keyed hash
// (HMAC-SHA-256 with a pepper from DATA/keys) is stored: 256 random bits need no slow hash.
import { createHmac, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

export const ADMIN_KEY_PREFIX = 'vpa_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const ID_LENGTH = 12;
/** 43 base-62 characters carry 256 bits. */
const SECRET_LENGTH = 43;
const CHECKSUM_LENGTH = 6;
/** What secret scanners can match: `vpa_` + 12 + `_` + 49 base-62 characters. */
export const ADMIN_KEY_PATTERN = /^vpa_([0-9A-Za-z]{12})_([0-9A-Za-z]{43})([0-9A-Za-z]{6})$/;

export interface NewAdminKeyToken {
  /** The row's id, shown in listings. */
  readonly keyId: string;
  /** The whole key, shown once. */
  readonly token: string;
}

export function newAdminKeyToken(): NewAdminKeyToken {
  const keyId = randomBase62(ID_LENGTH);
  const body = `${ADMIN_KEY_PREFIX}${keyId}_${randomBase62(SECRET_LENGTH)}`;
  return { keyId, token: `${body}${checksumOf(body)}` };
}

export type ParsedAdminKeyToken =
  | { readonly kind: 'admin-key'; readonly keyId: string }
  | { readonly kind: 'bad-checksum' }
  | { readonly kind: 'not-an-admin-key' };

/** What a presented Bearer token is: an admin key (checksum correct), a damaged one, or something else (the secret). */
export function parseAdminKeyToken(token: string): ParsedAdminKeyToken {
  if (!token.startsWith(ADMIN_KEY_PREFIX)) return { kind: 'not-an-admin-key' };
  const match = ADMIN_KEY_PATTERN.exec(token);
  if (match === null) return { kind: 'bad-checksum' };
  const body = token.slice(0, token.length - CHECKSUM_LENGTH);
  if (checksumOf(body) !== match[3]) return { kind: 'bad-checksum' };
  return { kind: 'admin-key', keyId: match[1] ?? '' };
}

/** The stored form of a key: HMAC-SHA-256 under the pepper, hex. */
export function hashAdminKey(pepper: Buffer, token: string): string {
  return createHmac('sha256', pepper).update(token).digest('hex');
}

/** CRC-32 of the text before it, as 6 base-62 digits (62^6 > 2^32). */
function checksumOf(body: string): string {
  let value = crc32(body);
  let digits = '';
  for (let index = 0; index < CHECKSUM_LENGTH; index++) {
    digits = `${BASE62[value % 62] ?? '0'}${digits}`;
    value = Math.floor(value / 62);
  }
  return digits;
}

/** Uniformly random base-62 text: bytes of 248 and above are dropped, so no digit is more likely. */
function randomBase62(length: number): string {
  let text = '';
  while (text.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && text.length < length) text += BASE62[byte % 62];
    }
  }
  return text;
}
