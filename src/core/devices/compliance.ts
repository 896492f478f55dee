// Devices follow the MDM's compliance (`mdmInventory.compliance`): from what the inventory pass
// read, which devices to suspend (as `noncompliant` or `stale`) and which to resume. A device the
// MDM finds noncompliant, whose grace period ended, or that has not checked in for `staleAfter`
// is suspended; one it finds compliant again is resumed, but only from a suspension the portal
// made for compliance, never from one an administrator made by hand. A device suspended already
// for another reason (Jamf Pro's group, an administrator's) is suspended for compliance too, so
// that it stays suspended for as long as either reason stands. Everything else is kept as it is,
// so a pass repeated with the same answer changes nothing. A device found by its serial is judged
// by the strictest of the records holding it, as any record may. Pure: the pass applies it.
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
  const verdictOf = matches === 'serial' ? serialVerdicts(records, rules, now) : idVerdicts(records, rules, now);
  const changes: ComplianceChange[] = [];
  for (const device of devices) {
    const identifier = matches === 'mdm_id' ? device.mdmId : device.serial;
    if (identifier === null) continue;
    const verdict = verdictOf(inventoryIdentifier(identifier));
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

/** How strict a verdict is: the first suspends for what the MDM said, the last resumes. */
const VERDICT_STRICTNESS = ['suspend noncompliant', 'suspend stale', 'keep', 'resume'] as const;

function verdictStrictness(verdict: ComplianceVerdict): number {
  const key = verdict.action === 'suspend' ? `suspend ${verdict.reason}` : verdict.action;
  return (VERDICT_STRICTNESS as readonly string[]).indexOf(key);
}

/**
 * The verdicts of devices found by their serial alone. A serial is no proof of which record is
 * the device: any record may hold it (a virtual machine enrolled with a laptop's serial, the old
 * record of a device enrolled again or of a Mac whose logic board was replaced), and the one that
 * synced last is simply the one that synced last. Taking it would let a compliant record synced
 * after the device's noncompliant one end, or keep off, the device's suspension. So every record
 * holding the serial is judged and the strictest verdict counts, as a clock set wrong can already
 * only err towards suspending: a revocation is not undone by a record enrolled beside it. Only a
 * record's age is weighed against the others: a record that has not synced for `staleAfter` is
 * not judged stale while another record with the serial synced within it by a believable clock
 * (the device checks in, under one of its records), so an old record left behind does not keep a
 * device suspended for ever; what it last said of compliance still counts until it is deleted in
 * the MDM.
 */
function serialVerdicts(
  records: readonly MdmDeviceCompliance[],
  rules: MdmComplianceConfig,
  now: Date,
): (serial: string) => ComplianceVerdict {
  const bySerial = new Map<string, MdmDeviceCompliance[]>();
  for (const record of records) {
    if (record.serial === null) continue;
    const key = inventoryIdentifier(record.serial);
    const held = bySerial.get(key);
    if (held === undefined) bySerial.set(key, [record]);
    else held.push(record);
  }
  const believedUntil = now.getTime() + CHECK_IN_AHEAD_LEEWAY_MS;
  const fresh = (record: MdmDeviceCompliance) => {
    const at = record.lastCheckIn?.getTime();
    return (
      at !== undefined &&
      at <= believedUntil &&
      (rules.staleAfterMs === null || now.getTime() - at <= rules.staleAfterMs)
    );
  };
  const withoutStaleness: MdmComplianceConfig = { ...rules, staleAfterMs: null };
  return (serial) => {
    const held = bySerial.get(serial) ?? [];
    if (held.length <= 1) return judgeCompliance(held[0], rules, now);
    // One record synced within staleAfter: the device checks in, and the others' age says nothing more.
    const oneSyncs = held.some(fresh);
    const verdicts = held.map((record) => judgeCompliance(record, oneSyncs ? withoutStaleness : rules, now));
    // The strictest; of two as strict, the last by its text (of two stale ones, the later check-in: the
    // device's last under any record), so that the order Graph lists them in does not matter.
    return verdicts.reduce((strictest, verdict) => {
      const difference = verdictStrictness(verdict) - verdictStrictness(strictest);
      return difference < 0 || (difference === 0 && verdict.why > strictest.why) ? verdict : strictest;
    });
  };
}

/** The verdicts of devices found by their MDM id: the id is the record's own, so its record counts. */
function idVerdicts(
  records: readonly MdmDeviceCompliance[],
  rules: MdmComplianceConfig,
  now: Date,
): (id: string) => ComplianceVerdict {
  const byId = recordsById(records, now);
  return (id) => judgeCompliance(byId.get(id), rules, now);
}

/**
 * One record per MDM id. A list may hold an id twice (a JSON export's duplicates; Graph lists a
 * device once): the one that checked in last counts, and of two equally
 * recent (or undated) ones the stricter. A check-in more than CHECK_IN_AHEAD_LEEWAY_MS ahead of
 * `now` (a device, or an MDM, with its clock set wrong) says nothing of which record is newer,
 * and taken at its word it would win over every other record for as long as the clock is wrong,
 * an old record dated ahead over the device's own for good: of the records dated ahead the
 * strictest, and of it and the record that checked in last by a believable clock the stricter
 * counts. A wrong clock thus neither hides a stricter record nor brings back a laxer one.
 */
function recordsById(records: readonly MdmDeviceCompliance[], now: Date): Map<string, MdmDeviceCompliance> {
  const candidates = new Map<string, Candidates>();
  const believedUntil = now.getTime() + CHECK_IN_AHEAD_LEEWAY_MS;
  for (const record of records) {
    if (record.id === null) continue;
    const key = inventoryIdentifier(record.id);
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
