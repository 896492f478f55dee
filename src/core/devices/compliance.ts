// Devices follow the MDM's compliance (`mdmInventory.compliance`): from what the inventory pass
// read, which devices to suspend (as `noncompliant` or `stale`) and which to resume. A device the
// MDM finds noncompliant, whose grace period ended, or that has not checked in for `staleAfter`
// is suspended; one it finds compliant again is resumed, but only from a suspension the portal
// made for compliance, never from one an administrator made by hand. A device suspended already
// for another reason (Jamf Pro's group, an administrator's) is suspended for compliance too, so
// that it stays suspended for as long as either reason stands. Everything else is kept as it is,
// so a pass repeated with the same answer changes nothing. Pure: the pass applies it.
import type { MdmComplianceConfig } from '../../config/portal-config.js';
import type { MdmDeviceCompliance } from '../../mdm-client/inventory.js';
import type { DeviceId, UserId } from '../../shared/ids.js';
import type { DeviceState, StandingSuspension } from '../../storage/devices.js';
import { PORTAL_KEY_NAME } from '../admin-call.js';
import { standingSuspensions } from './suspension.js';

/** The reasons of the suspensions compliance makes, and the only ones it ends. */
export const COMPLIANCE_REASONS = ['noncompliant', 'stale'] as const;
export type ComplianceReason = (typeof COMPLIANCE_REASONS)[number];

/** What the MDM's record says of one device. */
export type ComplianceVerdict =
  | { readonly action: 'suspend'; readonly reason: ComplianceReason; readonly why: string }
  | { readonly action: 'resume' | 'keep'; readonly why: string };

/** A device compliance suspends or resumes. */
export interface ComplianceChange {
  readonly deviceId: DeviceId;
  readonly userId: UserId;
  readonly serial: string | null;
  readonly mdmId: string | null;
  readonly action: 'suspend' | 'resume';
  /** The suspension's reason: the new one, or the one a resume ends. */
  readonly reason: ComplianceReason;
  /** For a resume: when the suspension it ends was made (that one, not a later one, is ended). */
  readonly suspendedSince: string | null;
  /**
   * For a suspension: the device is suspended already for another reason, and this one is
   * recorded beside it (nothing leaves the nodes, so it does not count against
   * `maxSuspendPerPass`). False for a resume.
   */
  readonly suspendedAlready: boolean;
  /** What the MDM reported, for the log and the dry run. */
  readonly why: string;
}

/** A live device as the pass compares it. */
export interface ComparedDevice {
  readonly deviceId: DeviceId;
  readonly userId: UserId;
  readonly serial: string | null;
  readonly mdmId: string | null;
  readonly state: DeviceState;
  readonly suspension: StandingSuspension | null;
}

/** One device's verdict from its record (none: the MDM said nothing of its compliance, so it is kept). */
export function judgeCompliance(
  record: MdmDeviceCompliance | undefined,
  rules: MdmComplianceConfig,
  now: Date,
): ComplianceVerdict {
  if (record === undefined) return { action: 'keep', why: 'no compliance reported' };
  const checkIn = record.lastCheckIn;
  if (rules.staleAfterMs !== null && checkIn !== null && now.getTime() - checkIn.getTime() > rules.staleAfterMs)
    return { action: 'suspend', reason: 'stale', why: `last check-in ${checkIn.toISOString()}` };
  const state = record.state;
  switch (state.kind) {
    case 'compliant':
      return { action: 'resume', why: 'compliant' };
    case 'noncompliant':
      return { action: 'suspend', reason: 'noncompliant', why: 'noncompliant' };
    case 'in-grace-period':
      if (state.until === null) return undetermined(rules, 'in grace period without an end');
      return state.until.getTime() > now.getTime()
        ? { action: 'keep', why: `in grace period until ${state.until.toISOString()}` }
        : { action: 'suspend', reason: 'noncompliant', why: `grace period ended ${state.until.toISOString()}` };
    case 'undetermined':
      return undetermined(rules, state.reported);
  }
}

function undetermined(rules: MdmComplianceConfig, reported: string): ComplianceVerdict {
  return rules.undetermined === 'suspend'
    ? { action: 'suspend', reason: 'noncompliant', why: reported }
    : { action: 'keep', why: reported };
}

/**
 * A serial or MDM id as compared with the inventory: letter case aside, as MDMs and the tools
 * administrators copy ids from write them in either (Graph's device ids in small letters, many
 * tools in capitals; Apple serials in capitals, typed in small letters).
 */
export function inventoryIdentifier(identifier: string): string {
  return identifier.toLowerCase();
}

/**
 * What compliance changes among these devices (all in the inventory): a suspension only of a
 * device not suspended for compliance yet, a resume only of a compliance suspension the portal
 * made (each that stands, with its own time). `now`: when the reading of `records` ended, as a
 * device may check in while a long reading is under way.
 */
export function complianceChanges(
  devices: readonly ComparedDevice[],
  records: readonly MdmDeviceCompliance[],
  matches: 'serial' | 'mdm_id',
  rules: MdmComplianceConfig,
  now: Date,
): ComplianceChange[] {
  const byIdentifier = recordsByIdentifier(records, matches, now);
  const changes: ComplianceChange[] = [];
  for (const device of devices) {
    const identifier = matches === 'mdm_id' ? device.mdmId : device.serial;
    if (identifier === null) continue;
    const verdict = judgeCompliance(byIdentifier.get(inventoryIdentifier(identifier)), rules, now);
    const { deviceId, userId, serial, mdmId } = device;
    const forCompliance = standingSuspensions(device.suspension).filter(
      (suspension) => complianceReason(suspension.reason) !== undefined,
    );
    if (verdict.action === 'suspend' && forCompliance.length === 0)
      changes.push({
        deviceId,
        userId,
        serial,
        mdmId,
        action: 'suspend',
        reason: verdict.reason,
        suspendedSince: null,
        suspendedAlready: device.suspension !== null,
        why: verdict.why,
      });
    if (verdict.action !== 'resume') continue;
    for (const suspension of forCompliance) {
      const reason = complianceReason(suspension.reason);
      if (reason !== undefined && suspension.by === PORTAL_KEY_NAME)
        changes.push({
          deviceId,
          userId,
          serial,
          mdmId,
          action: 'resume',
          reason,
          suspendedSince: suspension.since,
          suspendedAlready: false,
          why: verdict.why,
        });
    }
  }
  return changes;
}

function complianceReason(reason: string): ComplianceReason | undefined {
  return COMPLIANCE_REASONS.find((candidate) => candidate === reason);
}

/** How strict a state is, for two records of one device that checked in at the same time. */
const STRICTNESS: Record<MdmDeviceCompliance['state']['kind'], number> = {
  noncompliant: 0,
  'in-grace-period': 1,
  undetermined: 2,
  compliant: 3,
};

/**
 * How far ahead of the portal's clock a check-in may lie and still be believed when two records
 * of one device are compared: clocks drift that much (Jamf Pro's event times get the same leeway).
 */
const CHECK_IN_AHEAD_LEEWAY_MS = 5 * 60_000;

/** The records of one device: the one that checked in last by a believable clock, the strictest of those ahead. */
interface Candidates {
  latest?: MdmDeviceCompliance;
  ahead?: MdmDeviceCompliance;
}

/**
 * One record per identifier. An MDM may hold two for a device (Intune keeps the old record of a
 * device enrolled again for a while): the one that checked in last counts, and of two equally
 * recent (or undated) ones the stricter. A check-in more than CHECK_IN_AHEAD_LEEWAY_MS ahead of
 * `now` (a device, or an MDM, with its clock set wrong) says nothing of which record is newer,
 * and taken at its word it would win over every other record for as long as the clock is wrong,
 * an old record dated ahead over the device's own for good: of the records dated ahead the
 * strictest, and of it and the record that checked in last by a believable clock the stricter
 * counts. A wrong clock thus neither hides a stricter record nor brings back a laxer one.
 */
function recordsByIdentifier(
  records: readonly MdmDeviceCompliance[],
  matches: 'serial' | 'mdm_id',
  now: Date,
): Map<string, MdmDeviceCompliance> {
  const candidates = new Map<string, Candidates>();
  const believedUntil = now.getTime() + CHECK_IN_AHEAD_LEEWAY_MS;
  for (const record of records) {
    const identifier = matches === 'mdm_id' ? record.id : record.serial;
    if (identifier === null) continue;
    const key = inventoryIdentifier(identifier);
    const found = candidates.get(key) ?? {};
    candidates.set(key, found);
    if ((record.lastCheckIn?.getTime() ?? -Infinity) > believedUntil) {
      if (found.ahead === undefined || stricter(record, found.ahead)) found.ahead = record;
    } else if (found.latest === undefined || prefers(record, found.latest)) found.latest = record;
  }
  const chosen = new Map<string, MdmDeviceCompliance>();
  for (const [key, { latest, ahead }] of candidates) {
    const record = latest === undefined || (ahead !== undefined && stricter(ahead, latest)) ? ahead : latest;
    if (record !== undefined) chosen.set(key, record);
  }
  return chosen;
}

function prefers(record: MdmDeviceCompliance, other: MdmDeviceCompliance): boolean {
  const at = record.lastCheckIn?.getTime() ?? -Infinity;
  const otherAt = other.lastCheckIn?.getTime() ?? -Infinity;
  if (at !== otherAt) return at > otherAt;
  return stricter(record, other);
}

function stricter(record: MdmDeviceCompliance, other: MdmDeviceCompliance): boolean {
  return STRICTNESS[record.state.kind] < STRICTNESS[other.state.kind];
}
