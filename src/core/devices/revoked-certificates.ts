// A device whose MDM certificate is revoked has left management: once a
// revocation list names the certificate the device is bound to now (not an older one it has since
// replaced), the device is retired — the same path as retire_device, final, with a receipt — as
// a change the portal made itself, in the audit log under the key name `(portal)`. A serial
// number is the issuing CA's own: a list names only the certificates of the CA whose key signed
// it, never those of another CA of the same name (one renewed under its name with a new key).
// Which lists are believed is src/core/devices/revocation-lists.ts's concern.
import { normalSerial, type RevokedSerials } from '../../keys/client-certificate.js';
import type { DeviceId, RevocationId } from '../../shared/ids.js';
import { liveDevicesWithCertificates, type IssuingCa, type StoredDevice } from '../../storage/devices.js';
import { portalCall } from '../admin-call.js';
import type { PortalContext } from '../context.js';
import { retireDevice } from './devices.js';

/** Serial numbers asked for in one query (each in two spellings). */
const SERIALS_PER_QUERY = 250;

export interface RetiredDevice {
  readonly deviceId: DeviceId;
  readonly revocationId: RevocationId | null;
}

/**
 * The live devices bound to a certificate this list revokes: of one of its serials, issued by one
 * of `signers` (the fingerprints of the CA certificates whose key signed the list), or, bound
 * before the portal kept which CA certificate issued a device's, by a CA of the list's name.
 */
export async function devicesOfRevokedCertificates(
  ctx: Pick<PortalContext, 'db'>,
  list: RevokedSerials,
  signers: readonly string[],
): Promise<StoredDevice[]> {
  const devices = new Map<DeviceId, StoredDevice>();
  const serials = [...list.serialNumbers];
  for (let start = 0; start < serials.length; start += SERIALS_PER_QUERY) {
    const spellings = serials.slice(start, start + SERIALS_PER_QUERY).flatMap(spellingsOf);
    for (const device of await liveDevicesWithCertificates(ctx.db, { issuer: list.issuer, signers }, spellings)) {
      // The stored serial is the certificate's own spelling; compare normalised.
      if (device.certificate !== null && list.serialNumbers.has(normalSerial(device.certificate.serialNumber)))
        devices.set(device.deviceId, device);
    }
  }
  return [...devices.values()];
}

/**
 * Retires these devices, each bound to a revoked certificate, or to one a revoked CA issued
 * (`revokedCas`: its fingerprints); what it retired.
 */
export async function retireDevicesOfRevokedCertificates(
  ctx: PortalContext,
  devices: readonly StoredDevice[],
  revokedCas: readonly IssuingCa[] = [],
): Promise<RetiredDevice[]> {
  const retired: RetiredDevice[] = [];
  for (const device of devices) {
    const serial = device.certificate?.serialNumber ?? '';
    const fingerprint = device.certificate?.issuerFingerprint ?? null;
    const issuer = device.certificate?.issuer ?? '';
    const reason = revokedCas.some((ca) => ca.fingerprint === fingerprint)
      ? `the CA that issued certificate ${serial} revoked`
      : fingerprint === null && revokedCas.some((ca) => ca.subject === issuer)
        ? `a CA named "${issuer}", which issued certificate ${serial}, revoked (bound before the portal kept which CA of a name issued a certificate)`
        : `certificate ${serial} revoked`;
    const done = await retireOnItsOwn(ctx, device.deviceId, reason, 'at the next refresh');
    if (done !== null) retired.push(done);
  }
  return retired;
}

/**
 * retire_device as a change the portal makes itself (audit key `(portal)`, with the reason);
 * logged, and a failure logged and answered null (the caller tries again `when`).
 */
export async function retireOnItsOwn(
  ctx: PortalContext,
  deviceId: DeviceId,
  reason: string,
  when: string,
): Promise<RetiredDevice | null> {
  const call = portalCall('retire_device', { device_id: deviceId, reason });
  try {
    const { revocationId } = await retireDevice({ ...ctx, call, events: ctx.events.forCall(call) }, deviceId, {
      reason,
    });
    ctx.logger.warn({ deviceId, reason, revocationId }, 'device retired by the portal');
    return { deviceId, revocationId };
  } catch (error) {
    ctx.logger.error({ err: error, deviceId, reason }, `a device could not be retired; tried again ${when}`);
    return null;
  }
}

/** A hex serial as a certificate may spell it: even length, and with a leading zero byte. */
function spellingsOf(serial: string): string[] {
  const even = serial.length % 2 === 1 ? `0${serial}` : serial;
  return [even, `00${even}`, even.toUpperCase(), `00${even.toUpperCase()}`];
}
