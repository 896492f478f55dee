// Devices that leave the MDM are retired, from the MDM's own inventory, as
// eduVPN's Intune research does with a cron script, built in: each pass reads the inventory,
// compares the live devices with it (by serial or mdm_id) and retires those gone — the same
// path as retire_device, under the audit key name `(portal)`. Gone means missed by two readable
// passes in a row: one reading can skip a device that is there (Jamf's offsets shift when a device
// is deleted and another added between two pages, and the count still adds up), and a retirement
// is final; the first miss is noted (src/storage/mdm-inventory-misses.ts), and counts only for a
// reading that began after it was noted (another instance's reading of the same moment is the
// same reading twice), and is written only over the misses of a reading that began before (a
// slow reading ending last must not note again what a later one found). With `compliance`, the
// same pass suspends the devices the MDM finds out of compliance and resumes those it finds
// compliant again (src/core/devices/compliance.ts), as suspend_device and resume_device under
// `(portal)`.
// Fail-safe: an inventory that cannot be read, or that would retire more than
// `maxRetirePerPass`, changes nothing (an MDM outage or a half-empty answer must never wipe the
// fleet); one that would suspend more than `compliance.maxSuspendPerPass` suspends none (a
// policy changed in a hurry must not cut off the fleet). Each refusal is logged once and shown
// in the metrics. `vpn-portal mdm sync --dry-run` runs a pass that only reports.
import type { MdmInventoryConfig, RetireLimit } from '../../config/portal-config.js';
import { readMdmInventory, type MdmInventory, type MdmReadOptions } from '../../mdm-client/inventory.js';
import { messageOf } from '../../shared/error-message.js';
import type { DeviceId, UserId } from '../../shared/ids.js';
import { liveDeviceIdentifiers } from '../../storage/devices.js';
import { inventoryMisses, replaceInventoryMisses } from '../../storage/mdm-inventory-misses.js';
import { raiseState } from '../../storage/portal-state.js';
import { formatAtom } from '../../shared/time.js';
import { PORTAL_KEY_NAME, portalCall } from '../admin-call.js';
import type { PortalContext } from '../context.js';
import { complianceChanges, type ComparedDevice, type ComplianceChange, inventoryIdentifier } from './compliance.js';
import { retireOnItsOwn, type RetiredDevice } from './revoked-certificates.js';
import { resumeDevice, standingSuspensions, suspendDevice } from './suspension.js';

/** A device the inventory no longer holds. */
export interface GoneDevice {
  readonly deviceId: DeviceId;
  readonly userId: UserId;
  readonly serial: string | null;
  readonly mdmId: string | null;
  /** When a pass first missed it (ATOM). */
  readonly firstMissedAt: string;
}

/** What one pass found and did. */
export type InventoryPass = {
  readonly at: Date;
  readonly dryRun: boolean;
} & (
  | { readonly outcome: 'unreadable'; readonly reason: string }
  | {
      /** `superseded`: another instance's reading that began later was applied first; this one changed nothing. */
      readonly outcome: 'retired' | 'dry-run' | 'too-many' | 'superseded';
      /** Identifiers in the inventory of the kind compared. */
      readonly inventorySize: number;
      /** Live devices compared (those with the identifier compared, registered before the inventory was read). */
      readonly compared: number;
      /** Missed by this pass and the one before: retired by this one (within the limit). */
      readonly gone: readonly GoneDevice[];
      /** Missed by this pass for the first time: retired by the next if it misses them too. */
      readonly missed: readonly GoneDevice[];
      /** The most this pass may retire. */
      readonly limit: number;
      readonly retired: readonly RetiredDevice[];
      /** What compliance changes (with `compliance`; null without). */
      readonly compliance: CompliancePass | null;
    }
);

/** What one pass found of compliance, and did. */
export interface CompliancePass {
  /** The devices the pass suspends (a dry run or a held pass: would suspend). */
  readonly suspend: readonly ComplianceChange[];
  /** The devices the pass resumes (would resume). */
  readonly resume: readonly ComplianceChange[];
  /** The most this pass may suspend. */
  readonly suspendLimit: number;
  /**
   * More to suspend than the limit (not counting devices suspended already for another reason):
   * none is suspended (the resumes still happen).
   */
  readonly held: boolean;
  readonly suspended: readonly DeviceId[];
  readonly resumed: readonly DeviceId[];
}

/** `portal_state` key: when the reading whose misses `mdm_inventory_misses` holds began (ISO). */
const MISSES_READING_BEGAN = 'mdm-inventory-misses-reading-began';
/** How far ahead of this instance's clock another's noted reading may have begun and still be believed. */
const CLOCK_AHEAD_LEEWAY_MS = 5 * 60_000;

/** Margin for registration times (stored to the second): a device registered while the inventory was read is not compared yet. */
const REGISTRATION_MARGIN_MS = 1000;

/** How many devices a pass may retire: the count, or the percentage of the live devices, at least 1. */
export function retireLimit(limit: RetireLimit, liveDevices: number): number {
  return limit.kind === 'count' ? limit.count : Math.max(1, Math.floor((liveDevices * limit.percent) / 100));
}

/**
 * Reads the inventory and compares the live devices with it: what a pass would retire, or why it
 * would retire nothing. Changes nothing (the dry run is this alone).
 */
export async function compareWithMdmInventory(
  ctx: Pick<PortalContext, 'db' | 'clock'>,
  config: MdmInventoryConfig,
  read: (options: MdmReadOptions) => Promise<MdmInventory> = (options) => readMdmInventory(config.source, options),
): Promise<InventoryPass> {
  const startedAt = ctx.clock.now();
  // The suspensions the reading may end: one made while it is under way (another instance's
  // newer reading) is none of its business.
  const suspendedBefore = config.compliance === null ? null : suspensionsNow(await liveDeviceIdentifiers(ctx.db));
  // The misses a reading that ended before this one began noted: only such a reading is the one
  // before. Another instance's reading of the same moment, noted while this one is under way,
  // may have skipped the same device for the same reason (one Jamf page shift read twice).
  const missedBeforeReading = await inventoryMisses(ctx.db);
  let inventory: MdmInventory;
  try {
    inventory = await read({ compliance: config.compliance !== null });
  } catch (error) {
    return { at: startedAt, dryRun: true, outcome: 'unreadable', reason: messageOf(error) };
  }
  // Compliance is judged as of the reading's end: a device may check in while a large tenant's
  // pages are read, and such a check-in is no clock set wrong (compliance.ts).
  const readAt = ctx.clock.now();
  const identifier = (device: { readonly serial: string | null; readonly mdmId: string | null }) =>
    config.matches === 'mdm_id' ? device.mdmId : device.serial;
  const known = new Set(
    [...(config.matches === 'mdm_id' ? inventory.ids : inventory.serials)].map(inventoryIdentifier),
  );
  const live = await liveDeviceIdentifiers(ctx.db);
  const compared = live.filter(
    (device) =>
      identifier(device) !== null && Date.parse(device.createdAt) + REGISTRATION_MARGIN_MS <= startedAt.getTime(),
  );
  // Noted before this reading began and still so now: no reading meanwhile found the device (nor
  // noted it anew, with another time).
  const missedNow = await inventoryMisses(ctx.db);
  const missedBefore = new Map(
    [...missedBeforeReading].filter(([deviceId, firstMissedAt]) => missedNow.get(deviceId) === firstMissedAt),
  );
  const missing = compared
    .filter((device) => !known.has(inventoryIdentifier(identifier(device) ?? '')))
    .map(({ deviceId, userId, serial, mdmId }) => ({
      deviceId,
      userId,
      serial,
      mdmId,
      firstMissedAt: missedBefore.get(deviceId) ?? missedNow.get(deviceId) ?? formatAtom(startedAt),
    }));
  const gone = missing.filter((device) => missedBefore.has(device.deviceId));
  const missed = missing.filter((device) => !missedBefore.has(device.deviceId));
  const limit = retireLimit(config.maxRetirePerPass, live.length);
  const missingIds = new Set(missing.map((device) => device.deviceId));
  const stay = compared.filter((device) => !missingIds.has(device.deviceId));
  const found = {
    at: startedAt,
    dryRun: true,
    inventorySize: known.size,
    compared: compared.length,
    gone,
    missed,
    limit,
    retired: [],
    compliance: compliancePlan(config, stay, inventory, live.length, readAt, suspendedBefore ?? new Map()),
  };
  return gone.length > limit ? { ...found, outcome: 'too-many' } : { ...found, outcome: 'dry-run' };
}

/** When each suspended device's suspensions were made, by reason (each reason that stands). */
function suspensionsNow(
  devices: readonly Pick<ComparedDevice, 'deviceId' | 'suspension'>[],
): Map<DeviceId, ReadonlyMap<string, string>> {
  const since = new Map<DeviceId, ReadonlyMap<string, string>>();
  for (const { deviceId, suspension } of devices)
    if (suspension !== null)
      since.set(
        deviceId,
        new Map(standingSuspensions(suspension).map((standing) => [standing.reason, standing.since])),
      );
  return since;
}

/**
 * What compliance would change among the devices the inventory holds; null without `compliance`.
 * A resume only of a suspension there was before the reading began (`suspendedBefore`).
 */
function compliancePlan(
  config: MdmInventoryConfig,
  devices: Parameters<typeof complianceChanges>[0],
  inventory: MdmInventory,
  liveDevices: number,
  now: Date,
  suspendedBefore: ReadonlyMap<DeviceId, ReadonlyMap<string, string>>,
): CompliancePass | null {
  if (config.compliance === null) return null;
  const changes = complianceChanges(devices, inventory.compliance, config.matches, config.compliance, now).filter(
    (change) =>
      change.action === 'suspend' || suspendedBefore.get(change.deviceId)?.get(change.reason) === change.suspendedSince,
  );
  const suspend = changes.filter((change) => change.action === 'suspend');
  const suspendLimit = retireLimit(config.compliance.maxSuspendPerPass, liveDevices);
  // Only devices whose configurations would leave the nodes count against the limit.
  const offNodes = suspend.filter((change) => !change.suspendedAlready).length;
  return {
    suspend,
    resume: changes.filter((change) => change.action === 'resume'),
    suspendLimit,
    held: offNodes > suspendLimit,
    suspended: [],
    resumed: [],
  };
}

/** One pass: read, compare, and (within the limits) retire the devices gone, then suspend and resume for compliance. */
export async function syncWithMdmInventory(ctx: PortalContext, config: MdmInventoryConfig): Promise<InventoryPass> {
  const found = await compareWithMdmInventory(ctx, config);
  if (found.outcome === 'unreadable') return { ...found, dryRun: false };
  // Noted also when too many are gone: those still missing next time count as gone then.
  if (!(await noteMisses(ctx, found.at, [...found.gone, ...found.missed]))) {
    ctx.logger.info(
      { readingBegan: found.at.toISOString() },
      'an MDM inventory reading that began after this one was applied first; this one changes nothing',
    );
    return { ...found, dryRun: false, outcome: 'superseded' };
  }
  if (found.outcome !== 'dry-run') return { ...found, dryRun: false };
  const retired: RetiredDevice[] = [];
  for (const device of found.gone) {
    const done = await retireOnItsOwn(
      ctx,
      device.deviceId,
      `gone from the ${config.source.provider} inventory`,
      'at the next pass',
    );
    if (done !== null) retired.push(done);
  }
  const compliance = found.compliance === null ? null : await applyCompliance(ctx, found.compliance);
  return { ...found, dryRun: false, outcome: 'retired', retired, compliance };
}

/**
 * Notes what a reading missed in place of what the last one noted, unless a reading that began
 * after it noted its own first (another instance's, quicker to end): that one may have found a
 * device this one skipped, and a miss written back over its finding would let the pass after
 * retire the device on one more skip. False when not noted: the later reading's word stands, and
 * this pass retires, suspends and resumes nothing on its older one.
 */
async function noteMisses(ctx: PortalContext, readingBegan: Date, misses: readonly GoneDevice[]): Promise<boolean> {
  return ctx.db.transaction().execute(async (trx) => {
    // A time noted ahead of this clock by more than the leeway is a clock set wrong: it holds nothing back.
    const ceiling = new Date(ctx.clock.now().getTime() + CLOCK_AHEAD_LEEWAY_MS).toISOString();
    if (!(await raiseState(trx, MISSES_READING_BEGAN, readingBegan.toISOString(), ceiling))) return false;
    await replaceInventoryMisses(trx, misses);
    return true;
  });
}

/** Suspends (unless held) and resumes as planned, each as the portal's own call; a failure is logged and tried again at the next pass. */
async function applyCompliance(ctx: PortalContext, plan: CompliancePass): Promise<CompliancePass> {
  const suspended: DeviceId[] = [];
  const resumed: DeviceId[] = [];
  for (const change of plan.held ? [] : plan.suspend) {
    const call = portalCall('suspend_device', { device_id: change.deviceId, reason: change.reason });
    try {
      const outcome = await suspendDevice(
        { ...ctx, call, events: ctx.events.forCall(call) },
        { deviceId: change.deviceId, reason: change.reason, by: PORTAL_KEY_NAME },
      );
      if (outcome.changed) {
        suspended.push(change.deviceId);
        ctx.logger.warn(
          { deviceId: change.deviceId, reason: change.reason, mdm: change.why },
          'device suspended for compliance',
        );
      } else if (outcome.reasonAdded)
        ctx.logger.warn(
          { deviceId: change.deviceId, reason: change.reason, mdm: change.why },
          'device suspended already for another reason; it stays suspended for compliance too',
        );
    } catch (error) {
      ctx.logger.error(
        { err: error, deviceId: change.deviceId },
        'a device could not be suspended; tried again at the next pass',
      );
    }
  }
  for (const change of plan.resume) {
    const call = portalCall('resume_device', { device_id: change.deviceId });
    try {
      const outcome = await resumeDevice(
        { ...ctx, call, events: ctx.events.forCall(call) },
        {
          deviceId: change.deviceId,
          by: PORTAL_KEY_NAME,
          onlyIfReason: change.reason,
          onlyIfBy: PORTAL_KEY_NAME,
          ...(change.suspendedSince === null ? {} : { onlyIfSuspendedSince: change.suspendedSince }),
        },
      );
      if (outcome.outcome === 'resumed') {
        resumed.push(change.deviceId);
        ctx.logger.info({ deviceId: change.deviceId, ended: change.reason }, 'device compliant again, resumed');
      } else if (outcome.outcome === 'still-suspended')
        ctx.logger.info(
          { deviceId: change.deviceId, ended: change.reason, reason: outcome.device.device.suspension?.reason },
          'device compliant again, but it stays suspended for another reason',
        );
    } catch (error) {
      ctx.logger.error(
        { err: error, deviceId: change.deviceId },
        'a device could not be resumed; tried again at the next pass',
      );
    }
  }
  return { ...plan, suspended, resumed };
}

/** Why the last pass held back: nothing done (unreadable, too-many), or no suspension (too-many-suspensions). */
export type InventoryRefusal = 'unreadable' | 'too-many' | 'too-many-suspensions';

export const INVENTORY_REFUSALS: readonly InventoryRefusal[] = ['unreadable', 'too-many', 'too-many-suspensions'];

/** The refusal a pass shows; null when it did all it found. */
export function refusalOf(pass: InventoryPass): InventoryRefusal | null {
  if (pass.outcome === 'unreadable' || pass.outcome === 'too-many') return pass.outcome;
  if (pass.outcome === 'superseded') return null;
  return pass.compliance?.held === true ? 'too-many-suspensions' : null;
}

/** The inventory pass every `interval`, one at a time; what the metrics show of it. */
export class MdmInventorySchedule {
  readonly #ctx: PortalContext;
  readonly #config: MdmInventoryConfig;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<InventoryPass> | null = null;
  /** The refusal being reported (logged once until a pass does all it found). */
  #refusing: InventoryRefusal | null = null;
  #lastPass: InventoryPass | null = null;
  #lastSuccess: Date | null = null;
  #retiredTotal = 0;

  constructor(ctx: PortalContext, config: MdmInventoryConfig) {
    this.#ctx = ctx;
    this.#config = config;
  }

  start(): void {
    void this.runNow();
    this.#timer = setInterval(() => void this.runNow(), this.#config.intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running;
  }

  /** A pass now (or the one running). */
  runNow(): Promise<InventoryPass> {
    this.#running ??= this.#pass().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  /** For the metrics. */
  get state(): {
    readonly lastPass: InventoryPass | null;
    readonly lastSuccess: Date | null;
    readonly refusing: InventoryRefusal | null;
    readonly retiredTotal: number;
  } {
    return {
      lastPass: this.#lastPass,
      lastSuccess: this.#lastSuccess,
      refusing: this.#refusing,
      retiredTotal: this.#retiredTotal,
    };
  }

  async #pass(): Promise<InventoryPass> {
    const pass = await syncWithMdmInventory(this.#ctx, this.#config).catch(
      (error: unknown): InventoryPass => ({
        at: this.#ctx.clock.now(),
        dryRun: false,
        outcome: 'unreadable',
        reason: `the devices could not be compared: ${messageOf(error)}`,
      }),
    );
    this.#lastPass = pass;
    // Overtaken by another instance's later reading: it read the MDM, but did nothing that
    // could be refused or could end a refusal.
    if (pass.outcome === 'superseded') {
      this.#lastSuccess = pass.at;
      return pass;
    }
    const refusal = refusalOf(pass);
    if (refusal !== null && refusal !== this.#refusing) this.#logRefusal(pass);
    if (refusal === null && this.#refusing !== null) this.#ctx.logger.info('the MDM inventory is compared again');
    this.#refusing = refusal;
    if (pass.outcome === 'retired') {
      this.#lastSuccess = pass.at;
      this.#retiredTotal += pass.retired.length;
    }
    return pass;
  }

  #logRefusal(pass: InventoryPass): void {
    if (pass.outcome === 'unreadable') {
      this.#ctx.logger.error(
        { reason: pass.reason },
        'the MDM inventory cannot be read; no device is retired until it can',
      );
      return;
    }
    if (pass.outcome === 'too-many') {
      this.#ctx.logger.error(
        { gone: pass.gone.length, limit: pass.limit, inventorySize: pass.inventorySize },
        'the MDM inventory would retire more devices than mdmInventory.maxRetirePerPass allows; none is retired',
      );
      return;
    }
    this.#ctx.logger.error(
      { suspend: pass.compliance?.suspend.length ?? 0, limit: pass.compliance?.suspendLimit ?? 0 },
      'the MDM inventory would suspend more devices than mdmInventory.compliance.maxSuspendPerPass allows; none is suspended',
    );
  }
}
