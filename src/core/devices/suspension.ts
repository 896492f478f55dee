// Suspending a device, the reversible counterpart of retiring it: its configurations stay in the
// database but leave every node (peers removed, OpenVPN clients disconnected, with a revocation
// receipt, as disable_user does for a user), and every path that puts configurations on nodes
// (reconcile, peer_list, a node's restart, the OpenVPN connect check) leaves a suspended device's
// out, because it reads the device's state from the database. Resuming puts the unexpired ones
// back (not while the user is disabled). The MDM's compliance checks call these with their own
// reasons and resume only what they suspended (`onlyIfReason`, `onlyIfBy`).
import type { DeviceId, RevocationId } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import { certificatesOfDevice, type OpenVpnCertificate } from '../../storage/certificates.js';
import { insertDeviceHistory, lastSuspension } from '../../storage/device-history.js';
import {
  lockDevice,
  resumeStoredDevice,
  suspendStoredDevice,
  takeOverSuspension,
  type StoredDevice,
} from '../../storage/devices.js';
import type { Db } from '../../storage/database.js';
import { findUser } from '../../storage/users.js';
import { stampPeersOfDevice, type WireGuardPeer } from '../../storage/wg-peers.js';
import { assertDeviceWithinReach } from '../access/index.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import { openVpnConfiguration, wireGuardConfiguration } from '../events.js';
import { addPeersToNodes, readTimeNow, removalsOf } from '../nodes/index.js';
import { newRevocationId, revokeOnNodes } from '../revocations/index.js';
import { deviceRef, getDevice, type DeviceRecord } from './devices.js';

/** The reason of a suspension whose caller gave none. */
export const DEFAULT_SUSPENSION_REASON = 'administrator';

/** Reasons the metrics name as they are; any other text is counted as `other` (a label must stay bounded). */
export const COUNTED_SUSPENSION_REASONS: readonly string[] = ['administrator', 'noncompliant', 'stale', 'jamf-group'];

/** The metrics label of a suspension's reason. */
export function suspensionReasonLabel(reason: string): string {
  return COUNTED_SUSPENSION_REASONS.includes(reason) ? reason : 'other';
}

export interface SuspendRequest {
  readonly deviceId: DeviceId;
  /** 1–200 characters without control characters; default `administrator`. */
  readonly reason?: string;
  /** Who suspends: an admin key's name, `mdm`, `(portal)`, … */
  readonly by: string;
  /**
   * An administrator's own call (the Admin API, the console, the command line): a device that
   * another author suspended (the MDM's checks, Jamf Pro) becomes suspended by this one, with
   * this reason, so that a resume limited to the earlier author or reason no longer ends it.
   */
  readonly byHand?: boolean;
}

export interface ResumeRequest {
  readonly deviceId: DeviceId;
  readonly by: string;
  /** Resume only a suspension for this reason (one of these): a device suspended otherwise stays suspended. */
  readonly onlyIfReason?: string | readonly string[];
  /** Resume only a suspension made by this author (the portal's own, never an administrator's by hand). */
  readonly onlyIfBy?: string;
  /**
   * Resume only the suspension made at this moment (its `since`): the one the caller saw, not one
   * made since by someone who knew more (another portal instance's newer reading of the MDM).
   */
  readonly onlyIfSuspendedSince?: string;
}

export interface SuspendOutcome {
  readonly device: DeviceRecord;
  /** false when the device was suspended already (nothing changed). */
  readonly changed: boolean;
  /** The receipt of its configurations leaving the nodes (for a repeated call: the suspension's own); null when it had none. */
  readonly revocationId: RevocationId | null;
}

export interface ResumeOutcome {
  readonly device: DeviceRecord;
  /**
   * `not-suspended` and `other-reason` (another reason, another author than `onlyIfBy`, or another
   * suspension than `onlyIfSuspendedSince`) changed nothing.
   */
  readonly outcome: 'resumed' | 'not-suspended' | 'other-reason';
}

const CONTROL_CHARACTERS = /\p{Cc}/u;

/** Suspends a registered or active device; a suspended one is answered as it is. */
export async function suspendDevice(ctx: PortalContext, request: SuspendRequest): Promise<SuspendOutcome> {
  const reason = request.reason ?? DEFAULT_SUSPENSION_REASON;
  const length = [...reason].length;
  if (length < 1 || length > 200 || CONTROL_CHARACTERS.test(reason))
    throw new PortalError('invalid-parameter', 'a suspension reason is 1 to 200 characters, no control characters');
  const revocationId = newRevocationId(ctx);
  const done = await ctx.events.change(ctx.db, async (trx, announce) => {
    const device = await changeableDevice(ctx, trx, request.deviceId, 'suspend');
    if (device.state === 'suspended') {
      // The same suspension asked for again: its receipt, so that a retry can follow it.
      const revocationId = (await lastSuspension(trx, device.deviceId))?.revocationId ?? null;
      if (request.byHand === true && device.suspension !== null && device.suspension.by !== request.by)
        await takeOver(trx, device, reason, request.by, revocationId, ctx.clock.now());
      return { changed: false as const, revocationId };
    }
    const at = ctx.clock.now();
    // New revisions, after the device's row was locked: newer than anything sent for them before.
    const peers = await stampPeersOfDevice(trx, device.deviceId);
    const certificates = await certificatesOfDevice(trx, device.deviceId);
    const configurations = [...peers.map(wireGuardConfiguration), ...certificates.map(openVpnConfiguration)];
    const receipt = configurations.length > 0 ? revocationId : null;
    await suspendStoredDevice(trx, device.deviceId, { reason, since: formatAtom(at), by: request.by });
    await insertDeviceHistory(trx, {
      deviceId: device.deviceId,
      at: formatAtom(at),
      change: 'suspended',
      stateBefore: device.state,
      stateAfter: 'suspended',
      reason,
      by: request.by,
      revocationId: receipt,
    });
    await announce({
      type: 'device.suspended',
      at,
      device: deviceRef(device),
      reason,
      by: request.by,
      revocationId: receipt,
      configurations,
    });
    return { changed: true as const, revocationId: receipt, peers, certificates };
  });
  if (done.changed) await takeOffNodes(ctx, request, reason, done);
  return { device: await getDevice(ctx, request.deviceId), changed: done.changed, revocationId: done.revocationId };
}

/** An administrator takes over a suspension another author made: nothing leaves the nodes again. */
async function takeOver(
  trx: Db,
  device: StoredDevice,
  reason: string,
  by: string,
  revocationId: RevocationId | null,
  at: Date,
): Promise<void> {
  await takeOverSuspension(trx, device.deviceId, { reason, by });
  await insertDeviceHistory(trx, {
    deviceId: device.deviceId,
    at: formatAtom(at),
    change: 'suspended',
    stateBefore: 'suspended',
    stateAfter: 'suspended',
    reason,
    by,
    revocationId,
  });
}

async function takeOffNodes(
  ctx: PortalContext,
  request: SuspendRequest,
  reason: string,
  done: {
    readonly revocationId: RevocationId | null;
    readonly peers: readonly WireGuardPeer[];
    readonly certificates: readonly OpenVpnCertificate[];
  },
): Promise<void> {
  ctx.logger.info(
    {
      deviceId: request.deviceId,
      reason,
      by: request.by,
      configurations: done.peers.length + done.certificates.length,
      revocationId: done.revocationId,
    },
    'device suspended',
  );
  await revokeOnNodes(
    ctx,
    done.revocationId === null ? [] : [done.revocationId],
    removalsOf(done.peers),
    done.certificates,
    'suspend_device',
  );
}

/**
 * Ends a device's suspension (with `onlyIfReason`, only one for that reason): back to the state it
 * interrupted, its unexpired configurations back on their nodes unless its user is disabled.
 */
export async function resumeDevice(ctx: PortalContext, request: ResumeRequest): Promise<ResumeOutcome> {
  const reasons =
    request.onlyIfReason === undefined
      ? null
      : typeof request.onlyIfReason === 'string'
        ? [request.onlyIfReason]
        : request.onlyIfReason;
  const readAt = readTimeNow(ctx);
  const done = await ctx.events.change(ctx.db, async (trx, announce) => {
    const device = await changeableDevice(ctx, trx, request.deviceId, 'resume');
    if (device.state !== 'suspended' || device.suspension === null)
      return { outcome: 'not-suspended' as const, peers: [] };
    const reason = device.suspension.reason;
    if (reasons !== null && !reasons.includes(reason)) return { outcome: 'other-reason' as const, peers: [] };
    if (request.onlyIfBy !== undefined && device.suspension.by !== request.onlyIfBy)
      return { outcome: 'other-reason' as const, peers: [] };
    if (request.onlyIfSuspendedSince !== undefined && device.suspension.since !== request.onlyIfSuspendedSince)
      return { outcome: 'other-reason' as const, peers: [] };
    const at = ctx.clock.now();
    const suspension = await lastSuspension(trx, device.deviceId);
    const interrupted = await lastSuspension(trx, device.deviceId, 'interrupting');
    const back = interrupted?.stateBefore === 'registered' ? 'registered' : 'active';
    await resumeStoredDevice(trx, device.deviceId, back);
    await insertDeviceHistory(trx, {
      deviceId: device.deviceId,
      at: formatAtom(at),
      change: 'resumed',
      stateBefore: 'suspended',
      stateAfter: back,
      reason,
      by: request.by,
      revocationId: null,
    });
    await announce({
      type: 'device.resumed',
      at,
      device: deviceRef(device),
      reason,
      by: request.by,
      supersedes: suspension?.revocationId ?? null,
    });
    const peers = await stampPeersOfDevice(trx, device.deviceId);
    const user = await findUser(trx, device.userId);
    // A user disabled meanwhile keeps them off (enable_user brings them back).
    const now = formatAtom(at);
    const wanted = user === undefined || user.isDisabled ? [] : peers.filter((peer) => peer.expiresAt > now);
    return { outcome: 'resumed' as const, peers: wanted };
  });
  if (done.outcome === 'resumed') {
    ctx.logger.info(
      { deviceId: request.deviceId, by: request.by, configurations: done.peers.length },
      'device resumed',
    );
    await addPeersToNodes(ctx, done.peers, 'resume_device', readAt);
  }
  return { device: await getDevice(ctx, request.deviceId), outcome: done.outcome };
}

/** The device locked for a suspension or resume: 404 when unknown, 403 outside the key's reach, 409 when retired. */
async function changeableDevice(
  ctx: PortalContext,
  trx: Db,
  deviceId: DeviceId,
  verb: 'suspend' | 'resume',
): Promise<StoredDevice> {
  const device = await lockDevice(trx, deviceId);
  if (device === undefined) throw new PortalError('no-such-device', 'no device with this "device_id"');
  await assertDeviceWithinReach(ctx, trx, device, verb);
  if (device.state === 'retired') {
    throw new PortalError(
      'conflict',
      `device ${deviceId} is retired: a retired device can be neither suspended nor resumed (register it again for a new configuration)`,
    );
  }
  return device;
}
