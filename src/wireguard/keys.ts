// WireGuard (X25519) keys using only node's built-in crypto (reference §6.1).
// Keys travel as standard, padded Base64 of the raw 32 bytes, like `wg genkey`/`wg pubkey`.

import {
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  randomBytes,
  type KeyObject,
} from 'node:crypto';

import { asWireGuardKey, type WireGuardKey } from '../shared/ids.js';

const RAW_KEY_BYTES = 32;
// DER header of an X25519 public key (OID 1.3.101.110) whose last 32 bytes are the raw key.
const SPKI_X25519_HEADER = Buffer.from('302a300506032b656e032100', 'hex');

// Regex R1 of reference §3, made strict on purpose. Upstream's PHP pattern uses a
// bracket expression written like an alternation ("[A|E|...]"), which also admits
// "|" as the 43rd character, and its "$" also matches before one trailing newline.
// Neither can be a Base64 encoding of 32 bytes, so we reject both: we accept exactly
// 42 Base64 characters, then a character whose low 4 bits are zero (a 32-byte value
// leaves 4 unused bits there), then the single "=" pad. JavaScript's "$" without the
// "m" flag only matches at the very end, so no newline slips through.
const WIREGUARD_KEY_PATTERN = /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/;

export function isWireGuardKey(text: unknown): text is WireGuardKey {
  return typeof text === 'string' && WIREGUARD_KEY_PATTERN.test(text);
}

/** The lowest byte of 2^255 − 19 (the field Curve25519 works in), whose other bytes are 0x7f and 0xff. */
const FIELD_PRIME_LOWEST_BYTE = 0xed;

/** Why an Admin API or enrollment request's key is refused when it is not canonical. */
export const NON_CANONICAL_KEY_REASON =
  'not the canonical encoding of an X25519 public key (bit 255 set, or a value of 2^255 − 19 or more); send it as `wg pubkey` prints it';

/**
 * True when `text` is a key in the one encoding of its X25519 point: bit 255 clear and, read
 * little-endian, below 2^255 − 19. X25519 ignores bit 255 and reduces modulo the prime, so any
 * other encoding names the same point as a canonical key, yet WireGuard keeps peers by their
 * bytes: the twin would be a second peer for one device, outliving the revocation of the first.
 * Every way a key comes in (create, enroll, add_peer, a node's peer list) asks this.
 */
export function isCanonicalWireGuardKey(text: unknown): text is WireGuardKey {
  if (!isWireGuardKey(text)) return false;
  const raw = Buffer.from(text, 'base64');
  const top = raw[31] ?? 0;
  if ((top & 0x80) !== 0) return false;
  // Read little-endian, the values from 2^255 − 19 up to 2^255 − 1 are 0x7f, then thirty 0xff,
  // then at least 0xed in the lowest byte: compared byte by byte (every add_peer asks this).
  if (top !== 0x7f) return true;
  for (let index = 30; index >= 1; index--) if (raw[index] !== 0xff) return true;
  return (raw[0] ?? 0) < FIELD_PRIME_LOWEST_BYTE;
}

/**
 * True when `text` is a public key a device may bring (POST /create's `public_key`): Base64 of
 * 32 bytes that X25519 accepts. The all-zero key and the other small-order points are refused:
 * with them every private key gives the same, known shared secret. OpenSSL refuses to derive
 * a secret from such a point, so a trial derivation with a throw-away key tells them apart.
 */
export function isUsableWireGuardPublicKey(text: unknown): text is WireGuardKey {
  if (!isWireGuardKey(text)) return false;
  try {
    const publicKey = createPublicKey({
      key: Buffer.concat([SPKI_X25519_HEADER, Buffer.from(text, 'base64')]),
      format: 'der',
      type: 'spki',
    });
    return !diffieHellman({ privateKey: probeKey(), publicKey }).equals(Buffer.alloc(RAW_KEY_BYTES));
  } catch {
    return false;
  }
}

let probe: KeyObject | undefined;
function probeKey(): KeyObject {
  probe ??= generateKeyPairSync('x25519').privateKey;
  return probe;
}

export interface WireGuardKeyPair {
  privateKey: WireGuardKey;
  publicKey: WireGuardKey;
}

export function generateWireGuardKeyPair(): WireGuardKeyPair {
  const raw = randomBytes(RAW_KEY_BYTES);
  // Clamped as `wg genkey` does, so the private key has the form every WireGuard tool expects.
  raw[0] = (raw[0] ?? 0) & 248;
  raw[31] = ((raw[31] ?? 0) & 127) | 64;
  return { privateKey: asWireGuardKey(raw.toString('base64')), publicKey: publicKeyOfRaw(raw) };
}

/** The public key `wg pubkey` would print for this private key. Throws if the text is not a key. */
export function wireGuardPublicKey(privateKey: WireGuardKey): WireGuardKey {
  if (!isWireGuardKey(privateKey)) {
    throw new Error('invalid WireGuard private key: expected Base64 of 32 bytes');
  }
  return publicKeyOfRaw(Buffer.from(privateKey, 'base64'));
}

function publicKeyOfRaw(raw: Buffer): WireGuardKey {
  // Imported as a JWK (the public part is not needed to import), OpenSSL computes the public
  // key, and a JWK export hands it over: about 27 µs here. The import and then a Diffie-Hellman
  // with the base point took twice that; a DER import takes twelve times. Not a key made by
  // generateKeyPairSync and exported: Node 20 then deadlocks now and then (the export holds the
  // key's lock while it allocates; a garbage collection then finalizes the key's generation job,
  // which takes that lock too).
  const privateKey = createPrivateKey({
    key: { kty: 'OKP', crv: 'X25519', d: raw.toString('base64url'), x: '' },
    format: 'jwk',
  });
  return asWireGuardKey(jwkBytes(privateKey.export({ format: 'jwk' }).x).toString('base64'));
}

/** The 32 bytes of an X25519 JWK's `x` (Base64url, unpadded). */
function jwkBytes(value: string | undefined): Buffer {
  const raw = Buffer.from(value ?? '', 'base64url');
  if (raw.length !== RAW_KEY_BYTES) throw new Error('OpenSSL exported an X25519 key that is not 32 bytes');
  return raw;
}
