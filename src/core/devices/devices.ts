// Devices: a managed device the portal knows apart from its user — its MDM
// identifiers (serial, mdm_id), its platform, how it proves itself — so that a device holds at
// most one live configuration per profile (issuing again replaces it, src/core/issuing/issue.ts) and
// retiring it ends every tunnel it has, by the same path as delete_connection and disable_user:
// the database first, in one transaction with new revisions, then the nodes.
import { randomBytes } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Platform } from '../../shared/platforms.js';
import { asDeviceId, type DeviceId, type ProfileId, type RevocationId, type UserId } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import {
  bindCertificateToDevice,
  deleteCertificatesOfDevice,
  type OpenVpnCertificate,
} from '../../storage/certificates.js';
import {
  bindDeviceCertificate,
  configurationsOfDevice,
  configurationsOfDevices,
  findDevice,
  findLiveDevice,
  findLiveDevicesAnyCase,
  insertDevice,
  listStoredDevices,
  lockDevice,
  lockDeviceIdentifiers,
  markDeviceActive,
  retireStoredDevice,
  type DeviceCertificate,
  type DeviceConfiguration,
  type DeviceFilter,
  type StoredDevice,
} from '../../storage/devices.js';
import { deviceHistory, insertDeviceHistory, type DeviceHistoryEntry } from '../../storage/device-history.js';
import { revokeEnrollmentTokensOfDevice } from '../../storage/enrollment-tokens.js';
import { isRolledBackForConflict, isWriteConflict } from '../../storage/errors.js';
import { nextRevision, type Revision } from '../../storage/revisions.js';
import type { Database } from '../../storage/schema.js';
import { ensureUser } from '../../storage/users.js';
import { deletePeersOfDevice, type WireGuardPeer } from '../../storage/wg-peers.js';
import { callerName } from '../admin-call.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import {
  configurationsDeleted,
  openVpnConfiguration,
  wireGuardConfiguration,
  type ConfigurationRef,
  type DeviceRef,
  type Announce,
} from '../events.js';
import { removalsOf, releaseAddresses } from '../nodes/index.js';
import {
  assertDeviceWithinReach,
  assertProfileAllowed,
  noSuchProfile,
  reachableProfiles,
  visibleToCall,
  withinReach,
} from '../access/index.js';
import { newRevocationId, revokeOnNodes } from '../revocations/index.js';

export type { DeviceConfiguration, StoredDevice } from '../../storage/devices.js';
export type { DeviceHistoryEntry } from '../../storage/device-history.js';

/** Devices per page of GET /devices unless `limit` says otherwise. */
export const DEFAULT_DEVICE_PAGE = 100;

/** Attempts at a registration that lost a race for its serial or mdm_id. */
const MAX_ATTEMPTS = 3;

/** A device as a caller names it: by the portal's id, or by an MDM identifier. */
export type DeviceReference =
  | { readonly deviceId: DeviceId }
  | { readonly serial: string }
  | { readonly mdmId: string };

export interface DeviceRegistration {
  readonly userId: UserId;
  readonly profileId: ProfileId;
  readonly platform: Platform;
  readonly serial: string | undefined;
  readonly mdmId: string | undefined;
}

/** A device with its configurations, as the calls answer it. */
export interface DeviceRecord {
  readonly device: StoredDevice;
  readonly configurations: readonly DeviceConfiguration[];
}

/** Who makes a change, as a device's history says it: the caller's audit name; null when there is no call. */
export function changedBy(ctx: PortalContext): string | null {
  return ctx.call === undefined ? null : callerName(ctx.call.caller);
}

/** A new device id: `dev_`, 12 hex digits of milliseconds, 12 random: ids sort by registration time. */
export function newDeviceId(at: Date): DeviceId {
  return asDeviceId(`dev_${at.getTime().toString(16).padStart(12, '0')}${randomBytes(6).toString('hex')}`);
}

export function deviceRef(device: StoredDevice): DeviceRef {
  return {
    deviceId: device.deviceId,
    userId: device.userId,
    profileId: device.profileId,
    platform: device.platform,
    serial: device.serial,
    mdmId: device.mdmId,
  };
}

/** The fields that name a device on the wire (webhook bodies, the Admin API's device record). */
export function deviceWireFields(device: DeviceRef) {
  return {
    device_id: device.deviceId,
    user_id: device.userId,
    profile_id: device.profileId,
    platform: device.platform,
    serial: device.serial,
    mdm_id: device.mdmId,
  };
}

/**
 * Registers a device for a user (made when missing, as create does; it must not be disabled).
 * A serial or mdm_id of a live device of another user is refused (409); the same registration
 * sent again answers the device already registered; a retired device's may be registered anew.
 * `alsoWrite` runs in the registration's transaction, so that what it writes commits with the
 * device or not at all (a self-registration notes its user's profile check there).
 */
export async function registerDevice(
  ctx: PortalContext,
  registration: DeviceRegistration,
  alsoWrite?: (trx: Transaction<Database>) => Promise<void>,
): Promise<StoredDevice> {
  assertProfileAllowed(ctx, registration.profileId);
  if (!ctx.config.profiles.some((profile) => profile.profileId === registration.profileId))
    throw noSuchProfile(ctx, registration.profileId);
  if (registration.serial === undefined && registration.mdmId === undefined) {
    throw new PortalError(
      'invalid-parameter',
      'a device needs "serial" or "mdm_id" (or both): the identifier its MDM knows it by',
    );
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return await ctx.events.change(ctx.db, async (trx, announce) => {
        // First, so that a registration of the same identifier in another letter case waits
        // until this one committed, and then finds its device (sameRegistration).
        await lockDeviceIdentifiers(trx, { serial: registration.serial ?? null, mdmId: registration.mdmId ?? null });
        const now = ctx.clock.now();
        const user = await ensureUser(trx, registration.userId, formatAtom(now));
        if (user.isDisabled) throw new PortalError('user-disabled', 'user is disabled');
        await alsoWrite?.(trx);
        const existing = await sameRegistration(ctx, trx, registration);
        if (existing !== undefined) return existing;
        const device: StoredDevice = {
          deviceId: newDeviceId(now),
          userId: registration.userId,
          profileId: registration.profileId,
          platform: registration.platform,
          serial: registration.serial ?? null,
          mdmId: registration.mdmId ?? null,
          identity: 'token',
          certificate: null,
          state: 'registered',
          createdAt: formatAtom(now),
          retiredAt: null,
          lastSeenAt: null,
          suspension: null,
        };
        if (user.created) await announce({ type: 'user.created', at: now, userId: registration.userId });
        await insertDevice(trx, device);
        await insertDeviceHistory(trx, {
          deviceId: device.deviceId,
          at: device.createdAt,
          change: 'registered',
          stateBefore: null,
          stateAfter: 'registered',
          reason: null,
          by: changedBy(ctx),
          revocationId: null,
        });
        await announce({ type: 'device.registered', at: now, device: deviceRef(device) });
        return device;
      });
    } catch (error) {
      // Another registration took the serial or mdm_id meanwhile: the next attempt says whose.
      // A deadlock's rollback was run again by the events seam already.
      if (!isWriteConflict(error) || isRolledBackForConflict(error) || attempt >= MAX_ATTEMPTS) throw error;
    }
  }
}

/**
 * The live device already registered exactly so (a retry), or undefined; 409 when an identifier
 * is held otherwise, or, by no device as written, by one in another letter case.
 */
async function sameRegistration(
  ctx: PortalContext,
  trx: Transaction<Database>,
  registration: DeviceRegistration,
): Promise<StoredDevice | undefined> {
  await refuseOtherLetterCase(ctx, trx, registration);
  const holders = [
    registration.serial === undefined
      ? undefined
      : { name: 'serial', device: await findLiveDevice(trx, 'serial', registration.serial) },
    registration.mdmId === undefined
      ? undefined
      : { name: 'mdm_id', device: await findLiveDevice(trx, 'mdm_id', registration.mdmId) },
  ].filter((holder) => holder?.device !== undefined);
  let same: StoredDevice | undefined;
  for (const holder of holders) {
    const device = holder?.device;
    if (holder === undefined || device === undefined) continue;
    if (device.userId !== registration.userId) {
      throw new PortalError(
        'conflict',
        `"${holder.name}" is already registered to another user's device; retire that device first`,
      );
    }
    const identical =
      device.profileId === registration.profileId &&
      device.platform === registration.platform &&
      device.serial === (registration.serial ?? null) &&
      device.mdmId === (registration.mdmId ?? null);
    if (!identical || (same !== undefined && same.deviceId !== device.deviceId)) {
      // A key limited to some profiles learns no more of a device outside them than that it is there.
      throw new PortalError(
        'conflict',
        withinReach(ctx, device.profileId)
          ? `"${holder.name}" is already registered to device ${device.deviceId} of this user, with other details; retire it first`
          : `"${holder.name}" is already registered to a device of this user outside the key's profiles; a key for its profile may retire it`,
      );
    }
    same = device;
  }
  return same;
}

/**
 * 409 when a serial or mdm_id no live device holds as written is held by one in another letter
 * case (`8A1B…` beside `8a1b…`): MDMs name identifiers in either case (Jamf Pro's UDIDs in
 * capitals, Graph's ids in small letters, findLiveDevicesAnyCase), so two such devices could not
 * be told apart by a webhook or an inventory pass. The device already registered exactly so (a
 * retry) is not refused, whatever devices of other cases earlier versions let in beside it.
 */
async function refuseOtherLetterCase(
  ctx: PortalContext,
  trx: Transaction<Database>,
  registration: DeviceRegistration,
): Promise<void> {
  const identifiers = [
    { name: 'serial', column: 'serial', value: registration.serial },
    { name: 'mdm_id', column: 'mdm_id', value: registration.mdmId },
  ] as const;
  for (const { name, column, value } of identifiers) {
    if (value === undefined) continue;
    // The device holding it as written comes alone, else those holding it in another case.
    const [holder] = await findLiveDevicesAnyCase(trx, column, value);
    if (holder === undefined || (column === 'serial' ? holder.serial : holder.mdmId) === value) continue;
    // A key limited to some profiles, or a registration for another user, learns no more of the
    // device than that it is there.
    const which =
      holder.userId !== registration.userId
        ? 'a device of another user'
        : withinReach(ctx, holder.profileId)
          ? `device ${holder.deviceId} of this user, as ${JSON.stringify(column === 'serial' ? holder.serial : holder.mdmId)}`
          : "a device of this user outside the key's profiles";
    throw new PortalError(
      'conflict',
      `"${name}" ${JSON.stringify(value)} is already held by a live device in another letter case (${which}); identifiers that differ only in letter case cannot be told apart by the MDM: name it as that device has it, or retire that device first`,
    );
  }
}

/** One device with its configurations the key may see; 404 when there is none, 403 when outside the key's profiles. */
export async function getDevice(ctx: PortalContext, deviceId: DeviceId): Promise<DeviceRecord> {
  const device = await findDevice(ctx.db, deviceId);
  if (device === undefined) throw new PortalError('no-such-device', 'no device with this "device_id"');
  assertProfileAllowed(ctx, device.profileId);
  return { device, configurations: visibleToCall(ctx, await configurationsOfDevice(ctx.db, deviceId)) };
}

/**
 * A device the caller may see, with its configurations (of the caller's profiles) and its history,
 * oldest first: of its enrollments those of the caller's profiles, as of its configurations (an
 * enrollment from before the history kept its profile cannot be told apart, and is shown).
 */
export async function getDeviceWithHistory(
  ctx: PortalContext,
  deviceId: DeviceId,
): Promise<DeviceRecord & { readonly history: readonly DeviceHistoryEntry[] }> {
  const record = await getDevice(ctx, deviceId);
  const history = (await deviceHistory(ctx.db, deviceId)).filter(
    (entry) => entry.profileId === undefined || entry.profileId === null || withinReach(ctx, entry.profileId),
  );
  return { ...record, history };
}

export interface DevicePage {
  readonly devices: readonly DeviceRecord[];
  /** The id to pass as `cursor` for the next page; null on the last one. */
  readonly nextCursor: DeviceId | null;
}

/** One page of devices the caller may see (of its profiles), newest first, each with the configurations it may see. */
export async function listDevices(
  ctx: PortalContext,
  filter: Omit<DeviceFilter, 'profiles' | 'limit'> & { readonly limit?: number },
): Promise<DevicePage> {
  const limit = filter.limit ?? DEFAULT_DEVICE_PAGE;
  const rows = await listStoredDevices(ctx.db, { ...filter, profiles: reachableProfiles(ctx), limit: limit + 1 });
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const configurations = await configurationsOfDevices(
    ctx.db,
    page.map((device) => device.deviceId),
  );
  const records = page.map((device) => ({
    device,
    configurations: visibleToCall(ctx, configurations.get(device.deviceId) ?? []),
  }));
  return { devices: records, nextCursor: rows.length > limit && last !== undefined ? last.deviceId : null };
}

/** Finds the device a create or enrollment_token names; 404 when none, 409 when it is retired. */
export async function resolveDevice(ctx: PortalContext, reference: DeviceReference): Promise<StoredDevice> {
  const device =
    'deviceId' in reference
      ? await findDevice(ctx.db, reference.deviceId)
      : 'serial' in reference
        ? await findLiveDevice(ctx.db, 'serial', reference.serial)
        : await findLiveDevice(ctx.db, 'mdm_id', reference.mdmId);
  if (device === undefined)
    throw new PortalError('no-such-device', 'no registered device with this "device_id", "serial" or "mdm_id"');
  assertProfileAllowed(ctx, device.profileId);
  if (device.state === 'retired')
    throw new PortalError(
      'conflict',
      `device ${device.deviceId} is retired: register it again for a new configuration`,
    );
  return device;
}

/**
 * The device a configuration is issued to, checked against the request: the same user, and
 * the device's platform unless the request names the same one (409 otherwise).
 */
export async function deviceForIssue(
  ctx: PortalContext,
  reference: DeviceReference,
  request: { readonly userId: UserId; readonly platform?: Platform | undefined },
): Promise<StoredDevice> {
  const device = await resolveDevice(ctx, reference);
  if (device.userId !== request.userId)
    throw new PortalError('conflict', `device ${device.deviceId} belongs to another user`);
  if (request.platform !== undefined && request.platform !== device.platform) {
    throw new PortalError(
      'conflict',
      `device ${device.deviceId} is registered with platform "${device.platform}", not "${request.platform}"`,
    );
  }
  return device;
}

/** What a replacement took away, for the nodes once the change committed. */
export interface ReplacedConfigurations {
  readonly peers: readonly WireGuardPeer[];
  readonly certificates: readonly OpenVpnCertificate[];
  readonly revision: Revision | null;
  /** The receipt of their revocation (src/core/revocations/receipts.ts); made only when something was replaced. */
  readonly revocationId: RevocationId;
}

/**
 * Inside the transaction that stores a device's new configuration, before it is inserted: locks
 * the device (it must still be live) and deletes its configurations in the same profile, each
 * announced as `configuration.deleted`. A key the device re-enrolls with is free again after this.
 */
export async function takeDeviceSlot(
  ctx: PortalContext,
  trx: Transaction<Database>,
  announce: Announce,
  deviceId: DeviceId,
  profileId: ProfileId,
  at: Date,
): Promise<ReplacedConfigurations> {
  const device = await lockDevice(trx, deviceId);
  if (device === undefined) throw new PortalError('no-such-device', 'no device with this "device_id"');
  if (device.state === 'retired')
    throw new PortalError('conflict', `device ${deviceId} is retired: register it again for a new configuration`);
  if (device.state === 'suspended') {
    throw new PortalError(
      'conflict',
      `device ${deviceId} is suspended (${device.suspension?.reason ?? ''}): resume it before it gets a new configuration`,
    );
  }
  const peers = await deletePeersOfDevice(trx, deviceId, profileId);
  await releaseAddresses(trx, ctx.config, peers);
  const certificates = await deleteCertificatesOfDevice(trx, deviceId, profileId);
  const revocationId = newRevocationId(ctx);
  await announce(configurationsDeleted(peers, certificates, at, revocationId));
  return { peers, certificates, revision: peers.length > 0 ? await nextRevision(trx) : null, revocationId };
}

/** Who enrolled a device and how, for its history. */
export interface Enrollment {
  /** The caller's audit name; `(device)` when the device enrolled itself (a token, its certificate). */
  readonly by: string;
  /** `token …`, `certificate …` or null for a create. */
  readonly reason: string | null;
}

/**
 * After the new configuration was announced (an OpenVPN one inserted; a WireGuard one is inserted
 * last, with its device): it names the device, which is active now; announced as enrolled (and
 * replaced), and kept in the device's history.
 */
export async function bindDevice(
  trx: Transaction<Database>,
  announce: Announce,
  deviceId: DeviceId,
  configuration: ConfigurationRef,
  replaced: ReplacedConfigurations,
  at: Date,
  enrollment: Enrollment,
  certificate?: DeviceCertificate,
): Promise<void> {
  if (certificate !== undefined) await bindDeviceCertificate(trx, deviceId, certificate);
  // A WireGuard configuration is inserted with its device, as its create's last write
  // (src/core/issuing/wireguard.ts): there is no row to name it in yet.
  if (configuration.vpnProto === 'openvpn') await bindCertificateToDevice(trx, configuration.connectionId, deviceId);
  const before = await findDevice(trx, deviceId);
  await markDeviceActive(trx, deviceId);
  const device = await findDevice(trx, deviceId);
  if (device === undefined) return;
  await insertDeviceHistory(trx, {
    deviceId,
    at: formatAtom(at),
    change: 'enrolled',
    stateBefore: before?.state ?? null,
    stateAfter: device.state,
    reason: enrollment.reason,
    by: enrollment.by,
    revocationId: replaced.peers.length + replaced.certificates.length > 0 ? replaced.revocationId : null,
    profileId: configuration.profileId,
  });
  const ref = deviceRef(device);
  await announce({ type: 'device.enrolled', at, device: ref, configuration });
  const gone = [...replaced.peers.map(wireGuardConfiguration), ...replaced.certificates.map(openVpnConfiguration)];
  if (gone.length > 0) await announce({ type: 'device.replaced', at, device: ref, configuration, replaced: gone });
}

/** Once the replacing change committed: the replaced configurations leave their nodes (before the new one is added). */
export async function removeReplaced(ctx: PortalContext, replaced: ReplacedConfigurations): Promise<void> {
  if (replaced.peers.length === 0 && replaced.certificates.length === 0) return;
  const removals = replaced.revision === null ? [] : removalsOf(replaced.peers, replaced.revision);
  await revokeOnNodes(ctx, [replaced.revocationId], removals, replaced.certificates, 'replace');
}

/**
 * POST /retire_device: every configuration of the device leaves the database (one transaction,
 * with a new revision) and then the nodes; its enrollment tokens are revoked; the device is
 * retired for good. A device retired already is answered as it is. Like disable_user, the
 * revocation has a receipt (src/core/revocations/receipts.ts) when the device had configurations.
 */
export async function retireDevice(
  ctx: PortalContext,
  deviceId: DeviceId,
  /** Why, for the device's history: the portal's own retirements say it (a revoked certificate, …). */
  retirement: { readonly reason: string | null } = { reason: null },
): Promise<{ readonly device: DeviceRecord; readonly revocationId: RevocationId | null }> {
  const revocationId = newRevocationId(ctx);
  const retired = await ctx.events.change(ctx.db, async (trx, announce) => {
    const device = await lockDevice(trx, deviceId);
    if (device === undefined) throw new PortalError('no-such-device', 'no device with this "device_id"');
    // A key limited to some profiles retires a device whole or not at all: refused (403) when
    // a configuration or a token it would take away lies outside them.
    await assertDeviceWithinReach(ctx, trx, device);
    if (device.state === 'retired') return undefined;
    const peers = await deletePeersOfDevice(trx, deviceId);
    const certificates = await deleteCertificatesOfDevice(trx, deviceId);
    await releaseAddresses(trx, ctx.config, peers);
    const at = ctx.clock.now();
    const enrollmentTokenIds = await revokeEnrollmentTokensOfDevice(trx, deviceId, formatAtom(at));
    await retireStoredDevice(trx, deviceId, formatAtom(at));
    await insertDeviceHistory(trx, {
      deviceId,
      at: formatAtom(at),
      change: 'retired',
      stateBefore: device.state,
      stateAfter: 'retired',
      reason: retirement.reason,
      by: changedBy(ctx),
      revocationId: peers.length + certificates.length > 0 ? revocationId : null,
    });
    await announce(configurationsDeleted(peers, certificates, at, revocationId), {
      type: 'device.retired',
      at,
      device: deviceRef(device),
      enrollmentTokenIds,
    });
    return { peers, certificates, revision: await nextRevision(trx) };
  });
  const revoked = retired !== undefined && retired.peers.length + retired.certificates.length > 0;
  if (retired !== undefined) {
    ctx.logger.info(
      { deviceId, configurations: retired.peers.length + retired.certificates.length, revocationId },
      'device retired',
    );
    await revokeOnNodes(
      ctx,
      revoked ? [revocationId] : [],
      removalsOf(retired.peers, retired.revision),
      retired.certificates,
      'retire_device',
    );
  }
  return { device: await getDevice(ctx, deviceId), revocationId: revoked ? revocationId : null };
}
