// The text of the portal's secrets that people hand around (admin keys `vpa_…`, enrollment
// tokens `vpe_…`): `<prefix><id>_<secret><checksum>`. The prefix lets secret scanners (GitHub,
// GitLab, trufflehog) recognise a leaked one, and the CRC-32 checksum lets them — and the
// portal, before any database lookup — tell a real token from a random string, as GitHub's
// `ghp_` and NetBird's `nbp_` tokens do. The id is not secret: it names the stored row, so the
// secret part is checked against exactly one stored hash, in constant time. Only a keyed hash
// (HMAC-SHA-256 with a pepper from DATA/keys) is stored: 256 random bits need no slow hash.
import { createHmac, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const ID_LENGTH = 12;
/** 43 base-62 characters carry 256 bits. */
const SECRET_LENGTH = 43;
const CHECKSUM_LENGTH = 6;

export interface NewPrefixedToken {
  /** The row's id, shown in listings. */
  readonly id: string;
  /** The whole token, shown once. */
  readonly token: string;
}

export type ParsedPrefixedToken =
  | { readonly kind: 'token'; readonly id: string }
  | { readonly kind: 'bad-checksum' }
  | { readonly kind: 'other-prefix' };

/** What secret scanners can match: the prefix, 12 + `_` + 49 base-62 characters. */
export function prefixedTokenPattern(prefix: string): RegExp {
  return new RegExp(
    `^${prefix}([0-9A-Za-z]{${ID_LENGTH}})_([0-9A-Za-z]{${SECRET_LENGTH}})([0-9A-Za-z]{${CHECKSUM_LENGTH}})$`,
  );
}

export function newPrefixedToken(prefix: string): NewPrefixedToken {
  const id = randomBase62(ID_LENGTH);
  const body = `${prefix}${id}_${randomBase62(SECRET_LENGTH)}`;
  return { id, token: `${body}${checksumOf(body)}` };
}

/** What a presented token is: one of `prefix` (checksum correct), a damaged one, or something else. */
export function parsePrefixedToken(prefix: string, token: string): ParsedPrefixedToken {
  if (!token.startsWith(prefix)) return { kind: 'other-prefix' };
  const match = prefixedTokenPattern(prefix).exec(token);
  if (match === null) return { kind: 'bad-checksum' };
  const body = token.slice(0, token.length - CHECKSUM_LENGTH);
  if (checksumOf(body) !== match[3]) return { kind: 'bad-checksum' };
  return { kind: 'token', id: match[1] ?? '' };
}

/** The stored form of a token: HMAC-SHA-256 under the pepper, hex. */
export function hashPrefixedToken(pepper: Buffer, token: string): string {
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
