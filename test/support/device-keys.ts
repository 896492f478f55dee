// Keys a device makes and keeps, made the way a device makes them: a WireGuard key with
// `wg genkey`/`wg pubkey`, an OpenVPN key and its PKCS#10 request with `openssl`. Only the
// public halves (the public key, the CSR) are given to the portal; what a test greps for to
// show the private halves never reached the portal is here too.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ProfileConfigFile } from '../../src/config/schema.js';
import type { Db } from '../../src/storage/database.js';
import { COPIED_TABLES } from '../../src/storage/copy.js';
import { UNREACHABLE_NODE, type TestPortal } from './test-portal.js';

/** A profile `both` with WireGuard and OpenVPN on a node that never answers: the Admin API tests of device keys and renewals. */
export const BOTH_PROTOCOLS_PROFILE: ProfileConfigFile = {
  profileId: 'both',
  displayName: 'Both',
  hostName: 'vpn.example.org',
  wRangeFour: '10.62.0.0/24',
  wRangeSix: 'fd62::/64',
  oRangeFour: '10.61.0.0/24',
  oRangeSix: 'fd61::/64',
  nodeUrl: UNREACHABLE_NODE,
};

export interface DeviceWireGuardKey {
  readonly privateKey: string;
  readonly publicKey: string;
}

/** Why the Admin API and the enrollment endpoint refuse a non-canonical public key. */
export const NON_CANONICAL =
  'not the canonical encoding of an X25519 public key (bit 255 set, or a value of 2^255 − 19 or more); send it as `wg pubkey` prints it';

/** The same X25519 point as `publicKey`, encoded with bit 255 set: the twin a canonical check refuses. */
export function bit255Twin(publicKey: string): string {
  const raw = Buffer.from(publicKey, 'base64');
  raw[31] = (raw[31] ?? 0) | 0x80;
  return raw.toString('base64');
}

/** 2^255 − 19 + 9, encoded little-endian: the base point u = 9 as a value the field reduces. */
export const ABOVE_FIELD_PRIME_KEY = Buffer.concat([
  Buffer.from([0xf6]),
  Buffer.alloc(30, 0xff),
  Buffer.from([0x7f]),
]).toString('base64');

export function wgGenkey(): DeviceWireGuardKey {
  const privateKey = execFileSync('wg', ['genkey'], { encoding: 'utf8' }).trim();
  const publicKey = execFileSync('wg', ['pubkey'], { input: privateKey, encoding: 'utf8' }).trim();
  return { privateKey, publicKey };
}

export type CsrKind = 'Ed25519' | 'P-256' | 'P-384' | 'RSA';

export interface DeviceCsr {
  /** PKCS#8 PEM: stays on the device. */
  readonly privateKeyPem: string;
  readonly csrPem: string;
  /** `openssl pkey -pubout` of the key, PEM: what the certificate must hold. */
  readonly publicKeyPem: string;
}

const GENPKEY: Readonly<Record<CsrKind, readonly string[]>> = {
  Ed25519: ['-algorithm', 'ed25519'],
  'P-256': ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'],
  'P-384': ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-384'],
  RSA: ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048'],
};

/** A new key and a CSR for it; the subject is the device's own idea (the portal ignores it). */
export function opensslCsr(kind: CsrKind, subject = '/CN=my-laptop/O=Device'): DeviceCsr {
  const directory = mkdtempSync(join(tmpdir(), 'device-key-'));
  try {
    const keyFile = join(directory, 'device.key');
    execFileSync('openssl', ['genpkey', ...GENPKEY[kind], '-out', keyFile], { stdio: ['ignore', 'ignore', 'ignore'] });
    const csrPem = execFileSync('openssl', ['req', '-new', '-key', keyFile, '-subj', subject], { encoding: 'utf8' });
    const publicKeyPem = execFileSync('openssl', ['pkey', '-pubout', '-in', keyFile], { encoding: 'utf8' });
    return { privateKeyPem: readFileSync(keyFile, 'utf8'), csrPem, publicKeyPem };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/**
 * The forms a private key could leak in: a WireGuard key as Base64 and hex; a PEM key as its
 * Base64 body, each of its (not too short) lines, and its raw private part as Base64 and hex.
 */
export function privateKeyForms(key: string): string[] {
  if (!key.includes('-----BEGIN')) return [key, Buffer.from(key, 'base64').toString('hex')];
  const lines = key.split('\n').filter((line) => line !== '' && !line.startsWith('-----'));
  // A short last line would be found by chance anywhere.
  const longLines = lines.filter((line) => line.length >= 16);
  const jwk = createPrivateKey(key).export({ format: 'jwk' });
  if (jwk.d === undefined) throw new Error('not a private key');
  const raw = Buffer.from(jwk.d, 'base64url');
  return [lines.join(''), ...longLines, raw.toString('base64'), raw.toString('hex')];
}

/** Every row of every table the portal keeps, as text to search. */
export async function databaseText(db: Db): Promise<string> {
  const tables: Record<string, unknown> = {};
  for (const { table } of COPIED_TABLES) tables[table] = await db.selectFrom(table).selectAll().execute();
  return JSON.stringify(tables);
}

/**
 * A laptop that keeps its own WireGuard key handed on to frank: registered as his device in
 * `employees` and enrolled with that key. Answers frank's device id.
 */
export async function handLaptopToFrank(portal: TestPortal, publicKey: string): Promise<string> {
  const registered = await portal.post('/register_device', {
    user_id: 'frank',
    profile_id: 'employees',
    platform: 'windows',
    serial: 'LAPTOP-7',
  });
  assert.equal(registered.status, 200, registered.text);
  const deviceId = (registered.json() as { device: { device_id: string } }).device.device_id;
  const franks = await portal.post(
    '/create',
    { user_id: 'frank', profile_id: 'employees', device_id: deviceId, public_key: publicKey },
    { accept: 'application/x-wireguard-profile' },
  );
  assert.equal(franks.status, 200, franks.text);
  return deviceId;
}
