// What Jamf Pro's webhooks do to devices: a device that leaves an allowed smart group
// (`mdmPush.jamf.allowedGroups`) is suspended with reason `jamf-group` (one suspended already for
// another reason stays suspended for this one too), one that joins it has that reason ended, and is
// resumed only when no other reason stands (an administrator's or a compliance suspension stays);
// `ComputerInventoryCompleted` refreshes the computer's identifiers (a device registered with only
// its serial or only its UDID gets the other, unless another live device holds it in any letter
// case). A device is found by its UDID (the portal's `mdm_id`), else its serial, letter case aside
// (several devices that differ only in case are all suspended by a "left", and none is changed
// otherwise), and resumed only when the other identifier the event names does not differ from the
// one it is registered with (another Jamf record sharing its serial), and only by a record of a
// kind its platform may be (a computer: `macos` or `other`; a mobile device: `ios` or `other`): a
// virtual machine enrolled with a phone's serial neither resumes the phone, nor records a "joined"
// for it, nor gives it a UDID, while a "left" of either kind suspends it (a platform is only what
// the registration says, and a revocation errs on the side of the tunnel going). A device
// registered by its serial alone has no UDID to tell such records apart: with `mdmInventory` of
// Jamf Pro, the records that hold its serial, computers and mobile devices alike, are looked up
// before it is resumed or given a UDID, and while several do it is neither (Jamf Pro unreachable:
// 503, nothing resumed, the event's suspensions applied); a "left" never waits on it; one the event
// names by its Jamf id alone (as computer group events may) is looked up in Jamf Pro's inventory
// with the API client of `mdmInventory` when that is Jamf Pro's, before anything changes (Jamf Pro
// unreachable: 503, so that Jamf Pro sends it again; meanwhile only the devices it names otherwise
// that left are suspended, and nothing is resumed). Each device keeps the time (Jamf Pro's
// `eventTimestamp`) of the newest group event applied to it, and an older one delivered late or
// again changes nothing for it, nor does a "joined" as old as the event applied (of a "left" and a
// "joined" of one moment, the "left" stands); one dated ahead of the portal's clock orders nothing
// and resumes nothing. A device the event names among those that left is not resumed by the same
// event's "joined" entries. Repeated deliveries change nothing (suspending a suspended device and
// resuming an unsuspended one are no-ops), and a device the portal does not know is logged and
// counted, never an error: Jamf would only send it again; so is one retired between its look-up and
// its change, and the event goes on with the others it names. The changes are the portal's own
// (audit key `(portal)`, by `jamf`), as those of the inventory sync.
import type { JamfPushConfig } from '../../config/portal-config.js';
import { jamfDevicesById, jamfRecordsWithSerials } from '../../mdm-client/jamf.js';
import type { JamfDevice, JamfEvent } from '../../protocol/jamf-webhook.js';
import { messageOf } from '../../shared/error-message.js';
import type { Platform } from '../../shared/platforms.js';
import type { Db } from '../../storage/database.js';
import {
  claimJamfEvent,
  fillDeviceIdentifier,
  findDevice,
  findLiveDevicesAnyCase,
  type StoredDevice,
} from '../../storage/devices.js';
import { portalCall } from '../admin-call.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import { resumeDevice, suspendDevice, type SuspendOutcome } from './suspension.js';

/** The reason of a suspension for leaving an allowed Jamf smart group. */
export const JAMF_GROUP_REASON = 'jamf-group';
/** Who suspends and resumes, in the device's history. */
const JAMF_AUTHOR = 'jamf';
/**
 * How far ahead of the portal's clock Jamf Pro's may be. An event dated further ahead cannot be
 * put in order: it resumes nothing, and its time orders no later event.
 */
const JAMF_CLOCK_SKEW_MS = 5 * 60_000;

/**
 * For each kind of Jamf record, the platforms of the devices it may be: Jamf Pro's computers are
 * Macs, its mobile devices iPhones, iPads and Apple TVs (`ios`); `other` claims neither kind.
 * Windows, Linux and Android devices are no Jamf Pro record's.
 */
const PLATFORMS_OF_KIND: Readonly<Record<'computer' | 'mobile', readonly Platform[]>> = {
  computer: ['macos', 'other'],
  mobile: ['ios', 'other'],
};

/** Whether a Jamf record of this kind may be the device, by the platform it is registered with. */
function ofKind(device: StoredDevice, kind: 'computer' | 'mobile'): boolean {
  return PLATFORMS_OF_KIND[kind].includes(device.platform);
}

/** What the receiver counted since the portal started (the metrics read it). */
export class JamfPushCounts {
  /** Events received, by `webhookEvent` (ones the portal does not act on as `other`). */
  readonly events = new Map<string, number>();
  /** Devices named by an event that the portal does not know (or that Jamf named only by its id). */
  unknownDevices = 0;

  countEvent(event: JamfEvent): void {
    const label = event.kind === 'other' ? 'other' : event.webhookEvent;
    this.events.set(label, (this.events.get(label) ?? 0) + 1);
  }
}

/** What one event did. */
export interface JamfPushOutcome {
  /** `ignored`: an event of another group, or of a type the portal does not act on. */
  readonly handled: 'applied' | 'ignored';
  readonly suspended: number;
  readonly resumed: number;
  readonly refreshed: number;
  /**
   * Devices found whose state the event left as it was: already so, or suspended for another
   * reason (their `jamf-group` reason recorded or ended beside it).
   */
  readonly unchanged: number;
  readonly unknown: number;
}

export async function applyJamfEvent(
  ctx: PortalContext,
  config: JamfPushConfig,
  event: JamfEvent,
  counts: JamfPushCounts,
): Promise<JamfPushOutcome> {
  counts.countEvent(event);
  const outcome = { handled: 'applied' as const, suspended: 0, resumed: 0, refreshed: 0, unchanged: 0, unknown: 0 };
  if (event.kind === 'other') {
    ctx.logger.debug({ webhookEvent: event.webhookEvent }, 'Jamf Pro event of a type the portal ignores');
    return { ...outcome, handled: 'ignored' };
  }
  const found = deviceFinder(ctx, event.webhookEvent, counts);
  if (event.kind === 'inventory') {
    const [device, ...others] = await found(event.device);
    // Several devices that differ only in letter case: which one Jamf Pro means cannot be told.
    if (device === undefined || others.length > 0) return { ...outcome, unknown: 1 };
    const refreshed = await refreshIdentifiers(ctx, device, event.device);
    if (typeof refreshed !== 'boolean') return { ...outcome, unknown: 1 };
    return { ...outcome, refreshed: refreshed ? 1 : 0, unchanged: refreshed ? 0 : 1 };
  }
  const allowed = config.allowedGroups[event.devices];
  if (!allowed.ids.has(event.groupId) && !allowed.names.has(event.groupName)) {
    ctx.logger.debug(
      { webhookEvent: event.webhookEvent, devices: event.devices, groupId: event.groupId, groupName: event.groupName },
      'Jamf Pro smart group change of a group not in mdmPush.jamf.allowedGroups (for its kind of device); ignored',
    );
    return { ...outcome, handled: 'ignored' };
  }
  return applyGroupChange(ctx, event, counts, found);
}

type GroupChangeEvent = Extract<JamfEvent, { readonly kind: 'group-change' }>;

/** The live devices an entry of an event names: one, none, or several that differ only in letter case. */
type DeviceFinder = (device: JamfDevice) => Promise<readonly StoredDevice[]>;

/**
 * Finds the devices Jamf Pro names among the live ones; an unknown one is logged and counted, as
 * is a name several devices hold letter case aside (logged: only a suspension takes them all).
 */
function deviceFinder(ctx: PortalContext, webhookEvent: string, counts: JamfPushCounts): DeviceFinder {
  return async (device) => {
    const stored = await findByIdentifiers(ctx, device);
    if (stored.length > 1)
      ctx.logger.warn(
        { webhookEvent, udid: device.udid, serial: device.serial, deviceIds: stored.map((found) => found.deviceId) },
        'Jamf Pro named a device that several live devices match, letter case aside; a "left" suspends them all, nothing else changes them',
      );
    if (stored.length === 0) {
      counts.unknownDevices += 1;
      ctx.logger.info(
        { webhookEvent, jamfId: device.jamfId, udid: device.udid, serial: device.serial },
        device.udid === null && device.serial === null
          ? 'Jamf Pro named a device by its Jamf id only; the portal cannot match it (see mdm.md#jamf-pro-push)'
          : 'Jamf Pro named a device the portal does not know',
      );
    }
    return stored;
  };
}

/** An allowed group's change: the devices that left it are suspended, those that joined resumed. */
async function applyGroupChange(
  ctx: PortalContext,
  event: GroupChangeEvent,
  counts: JamfPushCounts,
  found: DeviceFinder,
): Promise<JamfPushOutcome> {
  const { removed, added, unresolved } = await withJamfIdentifiers(ctx, event.devices, event.removed, event.added);
  const tally: Tally = { suspended: 0, resumed: 0, refreshed: 0, unchanged: 0, unknown: 0 };
  // Dated ahead of the portal's clock: not in order with anything, so a "left" suspends without
  // being put in order (nor recorded: its time would order nothing), and a "joined" resumes nothing.
  const ahead = event.at !== null && event.at.getTime() > ctx.clock.now().getTime() + JAMF_CLOCK_SKEW_MS;
  // Devices the event names among those that left: none of its "joined" entries resumes them
  // (another record sharing a serial, an entry naming the device by another identifier), with
  // or without a time to order them by.
  const leaving = new Set<string>();
  // Jamf Pro could not say which devices some Jamf ids are: those named otherwise that left lose
  // their tunnels now all the same (a revocation does not wait on a look-up of others).
  for (const named of unresolved === null ? removed : removed.filter((device) => !idOnly(device))) {
    const devices = await found(named);
    if (devices.length === 0) tally.unknown += 1;
    // Several devices whose identifier differs only in letter case: a revocation takes them all.
    for (const device of devices) {
      leaving.add(device.deviceId);
      countDone(
        { counts, tally },
        await suspendForGroup(ctx, device, event.groupName, ahead ? null : event.at),
        'suspended',
      );
    }
  }
  // Nothing is resumed: a device that left, named by its id alone, may be one named as joining.
  // The delivery fails, so that Jamf Pro sends it again.
  if (unresolved !== null) throw unreadableJamf(tally.suspended + tally.unchanged, unresolved, 'ids');
  await resumeJoined(ctx, event, added, { counts, found, leaving, ahead, tally });
  return { handled: 'applied', ...tally };
}

/** What applyGroupChange hands on to resume the devices that joined. */
interface JoinedContext {
  readonly counts: JamfPushCounts;
  readonly found: DeviceFinder;
  /** The devices the event names among those that left. */
  readonly leaving: ReadonlySet<string>;
  /** The event is dated ahead of the portal's clock. */
  readonly ahead: boolean;
  readonly tally: Tally;
}

type Tally = { -readonly [K in keyof Omit<JamfPushOutcome, 'handled'>]: JamfPushOutcome[K] };

/**
 * Counts what a suspension or resume did. A device retired (or its user destroyed) since it was
 * found has nothing left to suspend or resume: it counts as unknown, as it would in a delivery
 * sent again, and the event goes on with the others it names.
 */
function countDone(
  joined: Pick<JoinedContext, 'counts' | 'tally'>,
  done: GroupChangeDone,
  changed: 'suspended' | 'resumed',
) {
  if (done === 'gone') joined.counts.unknownDevices += 1;
  joined.tally[done === 'gone' ? 'unknown' : done === 'changed' ? changed : 'unchanged'] += 1;
}

/**
 * Resumes the devices the event names among those that joined, unless refused (refusedResume);
 * a device registered by its serial alone only once Jamf Pro's inventory (when `mdmInventory` is
 * Jamf Pro's) holds no other record with its serial. Every look-up is made before anything is
 * resumed: Jamf Pro unreadable, nothing is, and the delivery fails so that Jamf Pro sends it again.
 */
async function resumeJoined(
  ctx: PortalContext,
  event: GroupChangeEvent,
  added: readonly JamfDevice[],
  joined: JoinedContext,
): Promise<void> {
  const { tally } = joined;
  const named: { entry: JamfDevice; device: StoredDevice; refused: Refusal | null }[] = [];
  for (const entry of added) {
    const devices = await joined.found(entry);
    const [device] = devices;
    if (device === undefined) tally.unknown += 1;
    else
      named.push({
        entry,
        device,
        refused: refusedResume(device, devices.length, entry, event.devices, joined),
      });
  }
  // A serial-only device the event would resume (or record the event's time for): which Jamf
  // record it is must be told by its serial alone.
  const serials = named.flatMap(({ entry, device, refused }) =>
    refused === null &&
    device.mdmId === null &&
    entry.serial !== null &&
    (device.state === 'suspended' || event.at !== null)
      ? [entry.serial]
      : [],
  );
  const holders = await recordsHoldingSerials(ctx, serials);
  if (holders.unreadable !== null)
    throw unreadableJamf(tally.suspended + tally.unchanged, holders.unreadable, 'serials');
  for (const { entry, device, refused } of named) {
    const records = entry.serial === null ? 0 : (holders.counts.get(entry.serial.toUpperCase()) ?? 0);
    const refusal = refused ?? (records > 1 && device.mdmId === null ? sharedSerial : null);
    if (refusal === null) {
      countDone(joined, await resumeForGroup(ctx, device, event.groupName, event.at), 'resumed');
      continue;
    }
    if (refusal.unknown) joined.counts.unknownDevices += 1;
    tally[refusal.unknown ? 'unknown' : 'unchanged'] += 1;
    ctx.logger.warn(
      {
        deviceId: device.deviceId,
        platform: device.platform,
        udid: entry.udid,
        serial: entry.serial,
        ...(refusal === sharedSerial ? { jamfRecords: records } : {}),
        group: event.groupName,
        eventTimestamp: event.at?.toISOString(),
      },
      refusal.message,
    );
  }
}

/** Why a device is not resumed, and whether it counts as unknown. */
interface Refusal {
  readonly unknown: boolean;
  readonly message: string;
}

/** A serial-only device whose serial several Jamf records hold: which one joined cannot be told. */
const sharedSerial: Refusal = {
  unknown: true,
  message:
    'Jamf Pro holds several records with the serial of a device registered without its UDID (mdm_id) that joined an allowed smart group; which one joined cannot be told, it is not resumed',
};

/**
 * Why a device the event names among those that joined is not resumed (and whether it counts as
 * unknown), or null to resume it. `matching`: how many live devices the entry names, letter case
 * aside; `kind`: the kind of the event's records.
 */
function refusedResume(
  device: StoredDevice,
  matching: number,
  named: JamfDevice,
  kind: 'computer' | 'mobile',
  { leaving, ahead }: Pick<JoinedContext, 'leaving' | 'ahead'>,
): Refusal | null {
  if (leaving.has(device.deviceId))
    return {
      unknown: false,
      message:
        'Jamf Pro named a device among those that left an allowed smart group and among those that joined it in one event; it stays suspended',
    };
  if (matching > 1)
    return {
      unknown: true,
      message:
        'Jamf Pro named a device that joined an allowed smart group that several live devices match, letter case aside; none is resumed',
    };
  // A computer record that shares a phone's serial (a virtual machine enrolled with it) is not
  // the phone, nor a mobile device record a Mac.
  if (!ofKind(device, kind))
    return {
      unknown: true,
      message: `Jamf Pro named, among the ${kind === 'computer' ? 'computers' : 'mobile devices'} that joined an allowed smart group, a device registered with a platform no such Jamf record has; not resumed`,
    };
  if (contradicts(device, named))
    return {
      unknown: true,
      message:
        'Jamf Pro named a device that joined an allowed smart group with an identifier that differs from the device found; not resumed',
    };
  if (ahead)
    return {
      unknown: false,
      message:
        "Jamf Pro dated an event of a device joining an allowed smart group ahead of the portal's clock; not resumed (check both clocks)",
    };
  return null;
}

/**
 * The devices named by their Jamf id alone, with the UDID and serial Jamf Pro's inventory gives
 * them, when `mdmInventory` is Jamf Pro's (else they stay as named, and are not found). When
 * Jamf Pro cannot be read, they stay as named and `unresolved` says why.
 */
async function withJamfIdentifiers(
  ctx: PortalContext,
  kind: 'computer' | 'mobile',
  removed: readonly JamfDevice[],
  added: readonly JamfDevice[],
): Promise<{ removed: readonly JamfDevice[]; added: readonly JamfDevice[]; unresolved: string | null }> {
  const ids = [...removed, ...added].filter(idOnly).map((device) => device.jamfId ?? 0);
  const source = ctx.config.mdmInventory?.source;
  if (ids.length === 0 || source?.provider !== 'jamf') return { removed, added, unresolved: null };
  let found: Awaited<ReturnType<typeof jamfDevicesById>>;
  try {
    found = await jamfDevicesById(source, kind, ids);
  } catch (error) {
    return { removed, added, unresolved: messageOf(error) };
  }
  const complete = (device: JamfDevice): JamfDevice => {
    const identifiers = idOnly(device) ? found.get(device.jamfId ?? 0) : undefined;
    return identifiers === undefined ? device : { jamfId: device.jamfId, ...identifiers };
  };
  return { removed: removed.map(complete), added: added.map(complete), unresolved: null };
}

/** A device the event names by its Jamf id alone. */
function idOnly(device: JamfDevice): boolean {
  return device.jamfId !== null && device.udid === null && device.serial === null;
}

/**
 * The 503 of a delivery whose look-up in Jamf Pro failed (of its Jamf ids, or of the records that
 * hold a serial-only device's serial): what it did all the same.
 */
function unreadableJamf(suspended: number, why: string, lookup: 'ids' | 'serials'): PortalError {
  const which = lookup === 'ids' ? 'it names otherwise that left' : 'it names that left';
  const done =
    suspended === 0
      ? 'nothing changed'
      : `${suspended === 1 ? `the device ${which} is` : `the ${suspended} devices ${which} are`} suspended, nothing else changed`;
  const what =
    lookup === 'ids'
      ? 'the devices the event names by Jamf id only'
      : 'the records that hold the serial of a device registered without its UDID';
  return new PortalError('unavailable', `could not look up in Jamf Pro ${what} (${done}): ${why}`);
}

/**
 * How many records of Jamf Pro's inventory, computers and mobile devices together, hold each of
 * these serials (keyed in capitals), when `mdmInventory` is Jamf Pro's (else none is looked up: a
 * serial is taken as naming the device registered with it). Both kinds count: a serial held by a
 * computer and a mobile device is shared (one of them is not what it says), and a device's
 * platform is only what its registration says. `unreadable` says why Jamf Pro could not be read.
 */
async function recordsHoldingSerials(
  ctx: PortalContext,
  serials: readonly string[],
): Promise<{ readonly counts: ReadonlyMap<string, number>; readonly unreadable: string | null }> {
  const source = ctx.config.mdmInventory?.source;
  if (serials.length === 0 || source?.provider !== 'jamf') return { counts: new Map(), unreadable: null };
  try {
    const records = await jamfRecordsWithSerials(source, ['computer', 'mobile'], serials);
    return { counts: new Map([...records].map(([serial, udids]) => [serial, udids.length])), unreadable: null };
  } catch (error) {
    return { counts: new Map(), unreadable: messageOf(error) };
  }
}

/**
 * Whether the event names the device with a UDID or serial other than the one it is registered
 * with: another Jamf record sharing one identifier (a virtual machine given the serial of a
 * suspended laptop), not this device. A resume needs every identifier both name to agree; a
 * suspension takes the device anyway (a revocation errs on the side of the tunnel going).
 */
function contradicts(device: StoredDevice, named: JamfDevice): boolean {
  const differ = (registered: string | null, told: string | null) =>
    registered !== null && told !== null && registered.toUpperCase() !== told.toUpperCase();
  return differ(device.mdmId, named.udid) || differ(device.serial, named.serial);
}

/**
 * The live devices with the UDID as their mdm_id, else with the serial, letter case aside (a UDID
 * registered as another tool writes it: a device leaving the group must not stay on for a
 * letter's case): the one with the identifier as written, else all that differ from it only in
 * case (more than one only when such devices were registered; see findLiveDevicesAnyCase).
 */
async function findByIdentifiers(ctx: PortalContext, device: JamfDevice): Promise<readonly StoredDevice[]> {
  const byUdid = device.udid === null ? [] : await findLiveDevicesAnyCase(ctx.db, 'mdm_id', device.udid);
  if (byUdid.length > 0 || device.serial === null) return byUdid;
  return findLiveDevicesAnyCase(ctx.db, 'serial', device.serial);
}

/**
 * The event's order, checked under the device's row lock: an event Jamf Pro made before the
 * newest one applied to the device changes nothing, nor does a "joined" (`resume`) made at the
 * same time as one applied (a "left" of the same millisecond stands). None for an event without
 * a time.
 */
function newerThanApplied(
  ctx: PortalContext,
  device: StoredDevice,
  at: Date | null,
  change: 'suspend' | 'resume',
): { onlyIf?: (trx: Db) => Promise<boolean> } {
  if (at === null) return {};
  const notAfter = new Date(ctx.clock.now().getTime() + JAMF_CLOCK_SKEW_MS).toISOString();
  return {
    onlyIf: (trx) => claimJamfEvent(trx, device.deviceId, at.toISOString(), notAfter, change === 'suspend'),
  };
}

function logOlder(ctx: PortalContext, device: StoredDevice, group: string, at: Date | null): void {
  ctx.logger.info(
    { deviceId: device.deviceId, group, eventTimestamp: at?.toISOString() },
    'Jamf Pro event older than the newest one applied to the device; ignored for it',
  );
}

/** What a suspension or resume did to one device: `gone` when it was retired since it was found. */
type GroupChangeDone = 'changed' | 'unchanged' | 'gone';

/**
 * Runs a suspension or resume of a device the event found; `gone` when the device was retired,
 * or its user destroyed, between the look-up and the row lock (the suspension or resume refuses
 * it): nothing is left to change, and the event must go on with the other devices it names.
 * Any other failure, or one of a device that is still live, is thrown.
 */
async function unlessGone(
  ctx: PortalContext,
  device: StoredDevice,
  group: string,
  change: () => Promise<GroupChangeDone>,
): Promise<GroupChangeDone> {
  try {
    return await change();
  } catch (error) {
    if (!(error instanceof PortalError) || (error.code !== 'conflict' && error.code !== 'no-such-device')) throw error;
    const now = await findDevice(ctx.db, device.deviceId);
    if (now !== undefined && now.state !== 'retired') throw error;
    ctx.logger.info(
      { deviceId: device.deviceId, group },
      'device named by a Jamf Pro event was retired before the event reached it; nothing to change for it',
    );
    return 'gone';
  }
}

function suspendForGroup(
  ctx: PortalContext,
  device: StoredDevice,
  group: string,
  at: Date | null,
): Promise<GroupChangeDone> {
  return unlessGone(ctx, device, group, async () => {
    const call = portalCall('suspend_device', { device_id: device.deviceId, reason: JAMF_GROUP_REASON });
    const done = await suspendDevice(
      { ...ctx, call, events: ctx.events.forCall(call) },
      {
        deviceId: device.deviceId,
        reason: JAMF_GROUP_REASON,
        by: JAMF_AUTHOR,
        ...newerThanApplied(ctx, device, at, 'suspend'),
      },
    );
    logSuspended(ctx, device, group, at, done);
    return done.changed ? 'changed' : 'unchanged';
  });
}

function logSuspended(
  ctx: PortalContext,
  device: StoredDevice,
  group: string,
  at: Date | null,
  done: SuspendOutcome,
): void {
  if (done.stale) logOlder(ctx, device, group, at);
  else if (done.changed)
    ctx.logger.info({ deviceId: device.deviceId, group }, 'device left an allowed Jamf Pro smart group');
  else if (done.reasonAdded)
    ctx.logger.info(
      { deviceId: device.deviceId, group, reason: done.device.device.suspension?.reason },
      'device left an allowed Jamf Pro smart group while suspended for another reason; it stays suspended for both',
    );
}

async function resumeForGroup(
  ctx: PortalContext,
  device: StoredDevice,
  group: string,
  at: Date | null,
): Promise<GroupChangeDone> {
  // A dated event is recorded for a device that is not suspended too: an older "left"
  // delivered after it changes nothing.
  if (device.state !== 'suspended' && at === null) return 'unchanged';
  return unlessGone(ctx, device, group, async () => {
    const call = portalCall('resume_device', { device_id: device.deviceId });
    const done = await resumeDevice(
      { ...ctx, call, events: ctx.events.forCall(call) },
      {
        deviceId: device.deviceId,
        by: JAMF_AUTHOR,
        onlyIfReason: JAMF_GROUP_REASON,
        ...newerThanApplied(ctx, device, at, 'resume'),
      },
    );
    if (done.outcome === 'stale') logOlder(ctx, device, group, at);
    else if (done.outcome === 'other-reason' || done.outcome === 'still-suspended')
      ctx.logger.info(
        { deviceId: device.deviceId, group, reason: done.device.device.suspension?.reason },
        'device joined an allowed Jamf Pro smart group but stays suspended for another reason',
      );
    return done.outcome === 'resumed' ? 'changed' : 'unchanged';
  });
}

/**
 * Fills in the UDID (mdm_id) or serial the device lacks; true when one was written. Nothing is
 * written to a device registered with a platform no Jamf computer has (`other-kind`: a virtual
 * machine enrolled with a phone's serial is not the phone). A device registered by its serial
 * alone given a UDID is bound to that Jamf record for good: not while Jamf Pro's inventory (when
 * `mdmInventory` is Jamf Pro's) holds several records with its serial (`shared-serial`, nothing
 * written); Jamf Pro unreadable, the delivery fails (503).
 */
async function refreshIdentifiers(
  ctx: PortalContext,
  device: StoredDevice,
  named: JamfDevice,
): Promise<boolean | 'shared-serial' | 'other-kind'> {
  if (!ofKind(device, 'computer')) {
    ctx.logger.warn(
      { deviceId: device.deviceId, platform: device.platform, udid: named.udid, serial: named.serial },
      "Jamf Pro's inventory of a computer named a device registered with a platform no Jamf computer has; nothing is written",
    );
    return 'other-kind';
  }
  if (device.mdmId === null && named.udid !== null && named.serial !== null) {
    const holders = await recordsHoldingSerials(ctx, [named.serial]);
    if (holders.unreadable !== null) throw unreadableJamf(0, holders.unreadable, 'serials');
    const records = holders.counts.get(named.serial.toUpperCase()) ?? 0;
    if (records > 1) {
      ctx.logger.warn(
        { deviceId: device.deviceId, udid: named.udid, serial: named.serial, jamfRecords: records },
        'Jamf Pro holds several records with the serial of a device registered without its UDID (mdm_id); which one it is cannot be told, so no UDID is written',
      );
      return 'shared-serial';
    }
  }
  let written = false;
  if (device.mdmId === null && named.udid !== null)
    written = (await fillDeviceIdentifier(ctx.db, device.deviceId, 'mdm_id', named.udid)) || written;
  if (device.serial === null && named.serial !== null)
    written = (await fillDeviceIdentifier(ctx.db, device.deviceId, 'serial', named.serial)) || written;
  if (written)
    ctx.logger.info(
      { deviceId: device.deviceId, udid: named.udid, serial: named.serial },
      "device's identifiers completed from Jamf Pro's inventory",
    );
  return written;
}
