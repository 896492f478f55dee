// `vpn-portal mdm sync --dry-run`: what a pass of the MDM inventory sync (mdmInventory) would do
// now — read the inventory, compare the live devices — printed, and nothing changed. The pass
// that retires runs in the portal every mdmInventory.interval, where the nodes are reached.
import { ConfigError } from '../config/load.js';
import { compareWithMdmInventory, type InventoryPass } from '../core/devices/index.js';
import { systemClock } from '../shared/time.js';
import { openDatabase } from '../storage/database.js';
import { loadExistingPortalConfig } from './existing-portal.js';
import { parseOptions } from './options.js';
import { formatTable } from './table.js';
import { MDM_USAGE } from './usage.js';

/** Runs an `mdm` subcommand; returns the exit code (1: the inventory cannot be read). */
export async function runMdmCommand(
  args: readonly string[],
  print: (line: string) => void,
  printError: (line: string) => void,
): Promise<number> {
  const [subcommand, ...rest] = args;
  const { values } = parseOptions({
    args: [...rest],
    options: { config: { type: 'string' }, 'dry-run': { type: 'boolean' }, json: { type: 'boolean' } },
    strict: true,
  });
  if (subcommand !== 'sync') throw new ConfigError(`unknown mdm command "${subcommand ?? ''}"\n${MDM_USAGE}`);
  if (values['dry-run'] !== true) {
    throw new ConfigError(
      `mdm sync needs --dry-run: the portal itself retires the devices gone, every mdmInventory.interval\n${MDM_USAGE}`,
    );
  }
  const config = loadExistingPortalConfig(values.config);
  if (config.mdmInventory === null) throw new ConfigError('mdm sync: the configuration has no mdmInventory');
  const inventory = config.mdmInventory;
  const db = await openDatabase(config.database, { timeoutMs: config.databaseTimeoutMs });
  let pass: InventoryPass;
  try {
    pass = await compareWithMdmInventory({ db, clock: systemClock }, inventory);
  } finally {
    await db.destroy();
  }
  if (values.json === true) {
    print(JSON.stringify(pass, null, 2));
    return pass.outcome === 'unreadable' ? 1 : 0;
  }
  if (pass.outcome === 'unreadable') {
    printError(
      `the ${inventory.source.provider} inventory cannot be read: ${pass.reason}; a pass would retire nothing`,
    );
    return 1;
  }
  print(
    `${inventory.source.provider} inventory: ${pass.inventorySize} devices; ${pass.compared} live devices compared by ${inventory.matches}`,
  );
  if (pass.gone.length === 0) {
    print('a pass would retire nothing: every device compared is in the inventory');
    return 0;
  }
  print(
    pass.outcome === 'too-many'
      ? `a pass would retire nothing: ${pass.gone.length} devices are gone, more than mdmInventory.maxRetirePerPass allows (${pass.limit})`
      : `a pass would retire ${pass.gone.length} (at most ${pass.limit} a pass):`,
  );
  const rows = pass.gone.map((device) => [device.deviceId, device.userId, device.serial ?? '-', device.mdmId ?? '-']);
  print(formatTable(['device_id', 'user_id', 'serial', 'mdm_id'], rows));
  return 0;
}
