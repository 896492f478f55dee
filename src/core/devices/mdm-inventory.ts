// Devices that leave the MDM are retired, from the MDM's own inventory, as
// eduVPN's Intune research does with a cron script, built in: each pass reads the inventory,
// compares the live devices with it (by serial or mdm_id) and retires those gone — the same
// path as retire_device, under the audit key name `(portal)`. Fail-safe: an inventory that
// cannot be read, or that would retire more than `maxRetirePerPass`, retires nothing (an MDM
// outage or a half-empty answer must never wipe the fleet); the refusal is logged once and
// shown in the metrics. `vpn-portal mdm sync --dry-run` runs a pass that only reports.
import type { MdmInventoryConfig, RetireLimit } from '../../config/portal-config.js';
import { readMdmInventory, type MdmInventory } from '../../mdm-client/inventory.js';
import { messageOf } from '../../shared/error-message.js';
import type { DeviceId, UserId } from '../../shared/ids.js';
import { liveDeviceIdentifiers } from '../../storage/devices.js';
import type { PortalContext } from '../context.js';
import { retireOnItsOwn, type RetiredDevice } from './revoked-certificates.js';

/** A device the inventory no longer holds. */
export interface GoneDevice {
  readonly deviceId: DeviceId;
  readonly userId: UserId;
  readonly serial: string | null;
  readonly mdmId: string | null;
}

/** What one pass found and did. */
export type InventoryPass = {
  readonly at: Date;
  readonly dryRun: boolean;
} & (
  | { readonly outcome: 'unreadable'; readonly reason: string }
  | {
      readonly outcome: 'retired' | 'dry-run' | 'too-many';
      /** Identifiers in the inventory of the kind compared. */
      readonly inventorySize: number;
      /** Live devices compared (those with the identifier compared, registered before the inventory was read). */
      readonly compared: number;
      readonly gone: readonly GoneDevice[];
      /** The most this pass may retire. */
      readonly limit: number;
      readonly retired: readonly RetiredDevice[];
    }
);

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
  read: () => Promise<MdmInventory> = () => readMdmInventory(config.source),
): Promise<InventoryPass> {
  const startedAt = ctx.clock.now();
  let inventory: MdmInventory;
  try {
    inventory = await read();
  } catch (error) {
    return { at: startedAt, dryRun: true, outcome: 'unreadable', reason: messageOf(error) };
  }
  const identifier = (device: { readonly serial: string | null; readonly mdmId: string | null }) =>
    config.matches === 'mdm_id' ? device.mdmId : device.serial;
  const known = config.matches === 'mdm_id' ? inventory.ids : inventory.serials;
  const live = await liveDeviceIdentifiers(ctx.db);
  const compared = live.filter(
    (device) =>
      identifier(device) !== null && Date.parse(device.createdAt) + REGISTRATION_MARGIN_MS <= startedAt.getTime(),
  );
  const gone = compared
    .filter((device) => !known.has(identifier(device) ?? ''))
    .map(({ deviceId, userId, serial, mdmId }) => ({ deviceId, userId, serial, mdmId }));
  const limit = retireLimit(config.maxRetirePerPass, live.length);
  const found = { at: startedAt, dryRun: true, inventorySize: known.size, compared: compared.length, gone, limit };
  return gone.length > limit
    ? { ...found, outcome: 'too-many', retired: [] }
    : { ...found, outcome: 'dry-run', retired: [] };
}

/** One pass: read, compare, and (within the limit) retire the devices gone. */
export async function syncWithMdmInventory(ctx: PortalContext, config: MdmInventoryConfig): Promise<InventoryPass> {
  const found = await compareWithMdmInventory(ctx, config);
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
  return { ...found, dryRun: false, outcome: 'retired', retired };
}

/** The inventory pass every `interval`, one at a time; what the metrics show of it. */
export class MdmInventorySchedule {
  readonly #ctx: PortalContext;
  readonly #config: MdmInventoryConfig;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<InventoryPass> | null = null;
  /** The refusal being reported (logged once until a pass succeeds). */
  #refusing: 'unreadable' | 'too-many' | null = null;
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
    readonly refusing: 'unreadable' | 'too-many' | null;
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
    if (pass.outcome === 'unreadable' || pass.outcome === 'too-many') {
      if (this.#refusing !== pass.outcome) {
        if (pass.outcome === 'unreadable')
          this.#ctx.logger.error(
            { reason: pass.reason },
            'the MDM inventory cannot be read; no device is retired until it can',
          );
        else {
          this.#ctx.logger.error(
            { gone: pass.gone.length, limit: pass.limit, inventorySize: pass.inventorySize },
            'the MDM inventory would retire more devices than mdmInventory.maxRetirePerPass allows; none is retired',
          );
        }
      }
      this.#refusing = pass.outcome;
      return pass;
    }
    if (this.#refusing !== null) this.#ctx.logger.info('the MDM inventory is compared again');
    this.#refusing = null;
    this.#lastSuccess = pass.at;
    this.#retiredTotal += pass.retired.length;
    return pass;
  }
}
