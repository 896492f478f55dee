// WireGuard (X25519) keys using only node's built-in crypto (reference §6.1).
// Keys travel as standard, padded Base64 of the raw 32 bytes, like `wg genkey`/`wg pubkey`.

import { createPrivateKey, createPublicKey, diffieHellman, generateKeyPairSync, type KeyObject } from 'node:crypto';

import { asWireGuardKey, type WireGuardKey } from '../shared/ids.js';

// DER headers of an X25519 key (OID 1.3.101.110) whose last 32 bytes are the raw key.
// Wrapping/unwrapping raw bytes with these fixed headers avoids a JWK round trip.
const PKCS8_X25519_HEADER = Buffer.from('302e020100300506032b656e04220420', 'hex');
const SPKI_X25519_HEADER = Buffer.from('302a300506032b656e032100', 'hex');
const RAW_KEY_BYTES = 32;

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

/**
 * True when `text` is a public key a device may bring (POST /create's `public_key`): Base64 of
 * 32 bytes that X25519 accepts. The all-zero key and the other small-order points are refused:
 * with them every private key gives the same, known shared secret. OpenSSL refuses to derive
 * a secret from such a point, so a trial derivation with a throw-away key tells them apart.
 */
export function isUsableWireGuardPublicKey(text: unknown): text is WireGuardKey {
  if (!isWireGuardKey(text)) return false;
  try {
    const publicKey = createPublicKey({ key: Buffer.concat([SPKI_X25519_HEADER, Buffer.from(text, 'base64')]), format: 'der', type: 'spki' });
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
  // OpenSSL clamps the scalar when generating X25519 keys, so the private key has the
  // same form `wg genkey` produces.
  // Asking for DER output directly skips two KeyObject exports: this runs on every create.
  const { privateKey, publicKey } = generateKeyPairSync('x25519', {
    privateKeyEncoding: { format: 'der', type: 'pkcs8' },
    publicKeyEncoding: { format: 'der', type: 'spki' },
  });
  return {
    privateKey: rawKeyAfterHeader(privateKey, PKCS8_X25519_HEADER),
    publicKey: rawKeyAfterHeader(publicKey, SPKI_X25519_HEADER),
  };
}

/** The public key `wg pubkey` would print for this private key. Throws if the text is not a key. */
export function wireGuardPublicKey(privateKey: WireGuardKey): WireGuardKey {
  if (!isWireGuardKey(privateKey)) {
    throw new Error('invalid WireGuard private key: expected Base64 of 32 bytes');
  }
  const keyObject = createPrivateKey({
    key: Buffer.concat([PKCS8_X25519_HEADER, Buffer.from(privateKey, 'base64')]),
    format: 'der',
    type: 'pkcs8',
  });
  return rawPublicKey(createPublicKey(keyObject));
}

function rawPublicKey(key: KeyObject): WireGuardKey {
  return rawKeyAfterHeader(key.export({ format: 'der', type: 'spki' }), SPKI_X25519_HEADER);
}

function rawKeyAfterHeader(der: Buffer, header: Buffer): WireGuardKey {
  // Guard against an unexpected encoding rather than silently slicing the wrong bytes.
  if (der.length !== header.length + RAW_KEY_BYTES || !der.subarray(0, header.length).equals(header)) {
    throw new Error('unexpected DER encoding of an X25519 key');
  }
  return asWireGuardKey(der.subarray(header.length).toString('base64'));
}
