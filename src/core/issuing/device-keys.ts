// Devices that keep their own keys (POST /create's `public_key` and `csr`, enrollment): the
// portal stores and deploys the public halves and never makes, sees or keeps a private key.
// A WireGuard public key must be a usable X25519 point that no configuration and no node uses;
// a CSR must be signed by its own Ed25519 or P-256 key. Which files can be made follows: with
// a WireGuard key the WireGuard files (not the Apple profile, which must carry the private
// key), with a CSR the OpenVPN file.
import type { Transaction } from 'kysely';
import {
  CertificateRequestError,
  readCertificateRequest,
  type DeviceCertificateKey,
} from '../../openvpn/certificate-request.js';
import { findCertificate } from '../../storage/certificates.js';
import type { Database } from '../../storage/schema.js';
import { peersWithKeys } from '../../storage/wg-peers.js';
import type { WireGuardKey } from '../../shared/ids.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import type { ConfigFormat, OfferedFormat } from './protocol-selection.js';

export interface DeviceKeys {
  /** The device's X25519 public key, for the WireGuard files; null: none brought. */
  readonly wireGuard: WireGuardKey | null;
  /** The key of the device's CSR, for the OpenVPN file; null: none brought. */
  readonly openVpn: DeviceCertificateKey | null;
}

/** The keys a request brings, the CSR checked; null when it brings none (the portal makes the key). */
export async function readDeviceKeys(
  publicKey: WireGuardKey | undefined,
  csr: string | undefined,
): Promise<DeviceKeys | null> {
  if (publicKey === undefined && csr === undefined) return null;
  let openVpn: DeviceCertificateKey | null = null;
  if (csr !== undefined) {
    try {
      openVpn = await readCertificateRequest(csr);
    } catch (error) {
      if (error instanceof CertificateRequestError)
        throw new PortalError('invalid-parameter', `invalid value for "csr": ${error.message}`);
      throw error;
    }
  }
  return { wireGuard: publicKey ?? null, openVpn };
}

/** The formats that can be made for these keys, in the order offered. */
export function formatsForDeviceKeys(offered: readonly OfferedFormat[], keys: DeviceKeys | null): OfferedFormat[] {
  if (keys === null) return [...offered];
  return offered.filter((entry) => canCarry(entry.format, keys));
}

function canCarry(format: ConfigFormat, keys: DeviceKeys): boolean {
  switch (format) {
    case 'wireguard':
    case 'wireguard+tcp':
      return keys.wireGuard !== null;
    case 'apple':
      return false;
    case 'openvpn':
      return keys.openVpn !== null;
  }
}

/** Said after "no common VPN protocol" when the device's keys narrowed the choice. */
export function deviceKeysHint(keys: DeviceKeys | null): string {
  if (keys === null) return '';
  return (
    '; with a device\'s own key the portal makes only the files that need no private key: "public_key" gives the WireGuard files ' +
    '(not the Apple profile, which must carry the private key), "csr" the OpenVPN file'
  );
}

/**
 * Refuses (409) a WireGuard public key that is already in use: by a node (its server key) or
 * by a configuration, of any user (or as an OpenVPN connection id). Run inside the storing
 * transaction; a key taken by a concurrent create makes its insert fail, and the retry ends here.
 */
export async function assertPublicKeyUnused(
  ctx: PortalContext,
  trx: Transaction<Database>,
  publicKey: WireGuardKey,
): Promise<void> {
  const nodeKeys = [...ctx.config.nodes.keys()].map((nodeNumber) => ctx.keys.wireGuardPublicKey(nodeNumber));
  const inUse =
    nodeKeys.includes(publicKey) ||
    (await peersWithKeys(trx, [publicKey])).length > 0 ||
    (await findCertificate(trx, publicKey)) !== undefined;
  if (inUse) throw new PortalError('conflict', '"public_key" is already in use');
}
