// Suspending a device, the reversible counterpart of retiring it: its configurations stay in the
// database but leave every node (peers removed, OpenVPN clients disconnected, with a revocation
// receipt, as disable_user does for a user), and every path that puts configurations on nodes
// (reconcile, peer_list, a node's restart, the OpenVPN connect check) leaves a suspended device's
// out, because it reads the device's state from the database. Resuming puts the unexpired ones
// back (not while the user is disabled). The MDM's compliance checks and Jamf Pro call these with
// their own reasons and resume only what they suspended (`onlyIfReason`, `onlyIfBy`): a device
// stays suspended for every such reason that still stands (a second one is recorded beside the
// first), and comes back only when none does. An administrator's resume ends them all.
import type { Transaction } from 'kysely';
import type { DeviceId, RevocationId } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import { certificatesOfDevice, type OpenVpnCertificate } from '../../storage/certificates.js';
import { insertDeviceHistory, lastSuspension } from '../../storage/device-history.js';
import {
  lockDevice,
  replaceSuspension,
  resumeStoredDevice,
  suspendStoredDevice,
  type DeviceSuspension,
  type StandingSuspension,
  type StoredDevice,
} from '../../storage/devices.js';
import type { Db } from '../../storage/database.js';
import type { Database } from '../../storage/schema.js';
import { findUser } from '../../storage/users.js';
import { stampPeersOfDevice, type WireGuardPeer } from '../../storage/wg-peers.js';
import { assertDeviceWithinReach } from '../access/index.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import { openVpnConfiguration, wireGuardConfiguration, type Announce } from '../events.js';
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
   * this reason, so that a resume limited to the earlier author or reason no longer ends it (the
   * earlier reason still stands beside it). Without it, the call is an automatic author's: a
   * device suspended already for other reasons stays suspended for this one too.
   */
  readonly byHand?: boolean;
  /**
   * Checked under the device's row lock before anything changes: false leaves the device as it
   * is (outcome `stale`). Jamf Pro's order of events: an older one than the device has seen.
   */
  readonly onlyIf?: (trx: Db) => Promise<boolean>;
}

/**
 * Without any `onlyIf…`, a resume ends every reason the device is suspended for (an
 * administrator's). With them, it ends only the reasons that meet them all, and the device comes
 * back only when no other reason stands.
 */
export interface ResumeRequest {
  readonly deviceId: DeviceId;
  readonly by: string;
  /** End only a suspension for this reason (one of these): a device suspended otherwise stays suspended. */
  readonly onlyIfReason?: string | readonly string[];
  /** End only a suspension made by this author (the portal's own, never an administrator's by hand). */
  readonly onlyIfBy?: string;
  /**
   * End only the suspension made at this moment (its `since`): the one the caller saw, not one
   * made since by someone who knew more (another portal instance's newer reading of the MDM).
   */
  readonly onlyIfSuspendedSince?: string;
  /** As SuspendRequest's: checked under the device's row lock first; false changes nothing (`stale`). */
  readonly onlyIf?: (trx: Db) => Promise<boolean>;
}

export interface SuspendOutcome {
  readonly device: DeviceRecord;
  /** false when the device was suspended already (nothing changed). */
  readonly changed: boolean;
  /** The receipt of its configurations leaving the nodes (for a repeated call: the suspension's own); null when it had none. */
  readonly revocationId: RevocationId | null;
  /** The device was suspended already, and now stands suspended for this reason too (nothing left the nodes). */
  readonly reasonAdded: boolean;
  /** The request's `onlyIf` said no: nothing changed. */
  readonly stale: boolean;
}

export interface ResumeOutcome {
  readonly device: DeviceRecord;
  /**
   * `still-suspended`: the suspension it may end ended, but another reason still stands, so the
   * device stays suspended (that one now shown) and nothing goes back on the nodes.
   * `not-suspended` and `other-reason` (another reason, another author than `onlyIfBy`, or another
   * suspension than `onlyIfSuspendedSince`) changed nothing, nor did `stale` (`onlyIf` said no).
   */
  readonly outcome: 'resumed' | 'still-suspended' | 'not-suspended' | 'other-reason' | 'stale';
}

const CONTROL_CHARACTERS = /\p{Cc}/u;

/**
 * Suspends a registered or active device. A suspended one is answered as it is, but for an
 * administrator's taking it over (`byHand`) and an automatic author's reason that does not stand yet.
 */
export async function suspendDevice(ctx: PortalContext, request: SuspendRequest): Promise<SuspendOutcome> {
  const reason = request.reason ?? DEFAULT_SUSPENSION_REASON;
  const length = [...reason].length;
  if (length < 1 || length > 200 || CONTROL_CHARACTERS.test(reason))
    throw new PortalError('invalid-parameter', 'a suspension reason is 1 to 200 characters, no control characters');
  const revocationId = newRevocationId(ctx);
  const done = await ctx.events.change(ctx.db, async (trx, announce) => {
    const device = await changeableDevice(ctx, trx, request.deviceId, 'suspend');
    if (request.onlyIf !== undefined && !(await request.onlyIf(trx)))
      return { changed: false as const, stale: true, reasonAdded: false, revocationId: null };
    if (device.suspension !== null)
      return {
        changed: false as const,
        stale: false,
        ...(await suspendAgain(ctx, trx, device, device.suspension, request, reason)),
      };
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
    return { changed: true as const, stale: false, reasonAdded: false, revocationId: receipt, peers, certificates };
  });
  if (done.changed) await takeOffNodes(ctx, request, reason, done);
  return {
    device: await getDevice(ctx, request.deviceId),
    changed: done.changed,
    revocationId: done.revocationId,
    reasonAdded: done.reasonAdded,
    stale: done.stale,
  };
}

/**
 * A suspended device suspended again: an administrator by hand takes the suspension over, an
 * automatic author's reason that does not stand yet is recorded beside the others (a history
 * row, nothing leaves the nodes again); anything else changes nothing. Either way the
 * suspension's receipt is answered, so that a retry can follow it.
 */
async function suspendAgain(
  ctx: PortalContext,
  trx: Db,
  device: StoredDevice,
  suspension: StandingSuspension,
  request: SuspendRequest,
  reason: string,
): Promise<{ revocationId: RevocationId | null; reasonAdded: boolean }> {
  const revocationId = (await lastSuspension(trx, device.deviceId))?.revocationId ?? null;
  const at = formatAtom(ctx.clock.now());
  const byHand = request.byHand === true;
  const standing = byHand
    ? takenOver(suspension, reason, request.by)
    : withReason(suspension, { reason, since: at, by: request.by });
  if (standing === null) return { revocationId, reasonAdded: false };
  await replaceSuspension(trx, device.deviceId, standing);
  await insertDeviceHistory(trx, {
    deviceId: device.deviceId,
    at,
    change: 'suspended',
    stateBefore: 'suspended',
    stateAfter: 'suspended',
    reason,
    by: request.by,
    revocationId,
  });
  return { revocationId, reasonAdded: !byHand };
}

/** Every suspension of a device that stands: the one shown first, then the others, oldest first. */
export function standingSuspensions(suspension: StandingSuspension | null): DeviceSuspension[] {
  if (suspension === null) return [];
  const { reason, since, by } = suspension;
  return [{ reason, since, by }, ...suspension.others];
}

/**
 * An administrator's take-over of another author's suspension: shown as theirs, with their
 * reason (its time stays); the reason it had still stands beside it. Null when it is theirs.
 */
function takenOver(suspension: StandingSuspension, reason: string, by: string): StandingSuspension | null {
  if (suspension.by === by) return null;
  const others = standingSuspensions(suspension)
    .filter((standing) => standing.reason !== reason)
    .sort((a, b) => a.since.localeCompare(b.since));
  return { reason, since: suspension.since, by, others };
}

/** An automatic author's reason added beside those that stand; null when it stands already. */
function withReason(suspension: StandingSuspension, added: DeviceSuspension): StandingSuspension | null {
  if (standingSuspensions(suspension).some((standing) => standing.reason === added.reason)) return null;
  return { ...suspension, others: [...suspension.others, added] };
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
 * Ends a device's suspension, or with `onlyIf…` the reasons that meet them: back to the state it
 * interrupted once no reason stands, its unexpired configurations back on their nodes unless its
 * user is disabled.
 */
export async function resumeDevice(ctx: PortalContext, request: ResumeRequest): Promise<ResumeOutcome> {
  const readAt = readTimeNow(ctx);
  const done = await ctx.events.change(ctx.db, async (trx, announce) => {
    const device = await changeableDevice(ctx, trx, request.deviceId, 'resume');
    if (request.onlyIf !== undefined && !(await request.onlyIf(trx))) return { outcome: 'stale' as const, peers: [] };
    if (device.suspension === null) return { outcome: 'not-suspended' as const, peers: [] };
    const standing = standingSuspensions(device.suspension);
    const ending = standing.filter((suspension) => endedBy(request, suspension));
    if (ending.length === 0) return { outcome: 'other-reason' as const, peers: [] };
    const [shown, ...others] = standing.filter((suspension) => !ending.includes(suspension));
    const at = ctx.clock.now();
    if (shown !== undefined) {
      await endSome(trx, device, { ...shown, others }, ending, request.by, at);
      return { outcome: 'still-suspended' as const, peers: [] };
    }
    const peers = await endSuspension(trx, announce, device, device.suspension.reason, request.by, at);
    return { outcome: 'resumed' as const, peers };
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

/** Whether the resume ends this suspension: it meets every `onlyIf…` the resume names. */
function endedBy(request: ResumeRequest, suspension: DeviceSuspension): boolean {
  const reasons = typeof request.onlyIfReason === 'string' ? [request.onlyIfReason] : request.onlyIfReason;
  return (
    (reasons === undefined || reasons.includes(suspension.reason)) &&
    (request.onlyIfBy === undefined || suspension.by === request.onlyIfBy) &&
    (request.onlyIfSuspendedSince === undefined || suspension.since === request.onlyIfSuspendedSince)
  );
}

/**
 * Some of a device's reasons end while another still stands: the device stays suspended, shown
 * with the first of those left (its own time and author), each ended reason a history row.
 */
async function endSome(
  trx: Db,
  device: StoredDevice,
  left: StandingSuspension,
  ending: readonly DeviceSuspension[],
  by: string,
  at: Date,
): Promise<void> {
  await replaceSuspension(trx, device.deviceId, left);
  for (const ended of ending)
    await insertDeviceHistory(trx, {
      deviceId: device.deviceId,
      at: formatAtom(at),
      change: 'resumed',
      stateBefore: 'suspended',
      stateAfter: 'suspended',
      reason: ended.reason,
      by,
      revocationId: null,
    });
}

/** The device's last reason ends: back to the state the suspension interrupted; the peers to put back on their nodes. */
async function endSuspension(
  trx: Transaction<Database>,
  announce: Announce,
  device: StoredDevice,
  reason: string,
  by: string,
  at: Date,
): Promise<WireGuardPeer[]> {
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
    by,
    revocationId: null,
  });
  await announce({
    type: 'device.resumed',
    at,
    device: deviceRef(device),
    reason,
    by,
    supersedes: suspension?.revocationId ?? null,
  });
  const peers = await stampPeersOfDevice(trx, device.deviceId);
  const user = await findUser(trx, device.userId);
  // A user disabled meanwhile keeps them off (enable_user brings them back).
  const now = formatAtom(at);
  return user === undefined || user.isDisabled ? [] : peers.filter((peer) => peer.expiresAt > now);
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
