// Queries on `mdm_inventory_misses` (migration 0046): the devices the last readable inventory
// pass did not find. Each pass replaces the whole set with what it missed, so a device found
// again, retired or gone from the portal leaves it at the next pass; the pass does so in its
// own transaction, beside the time its reading began (src/core/devices/mdm-inventory.ts).
import { asDeviceId, type DeviceId } from '../shared/ids.js';
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import type { Db } from './database.js';

/** Rows per statement: two columns, far below both dialects' parameter limits. */
const INSERT_ROWS = 500;

/** The devices the last pass missed, each with when a pass first missed it (ATOM). */
export async function inventoryMisses(db: Db): Promise<Map<DeviceId, string>> {
  const rows = await db.selectFrom('mdm_inventory_misses').select(['device_id', 'first_missed_at']).execute();
  return new Map(rows.map((row) => [asDeviceId(row.device_id), row.first_missed_at]));
}

/** What this pass missed, in place of what the last pass missed (run it in a transaction). */
export async function replaceInventoryMisses(
  db: Db,
  misses: readonly { readonly deviceId: DeviceId; readonly firstMissedAt: string }[],
): Promise<void> {
  await db.deleteFrom('mdm_inventory_misses').execute();
  for (const group of sizeLimitedGroups(misses, () => 1, INSERT_ROWS))
    await db
      .insertInto('mdm_inventory_misses')
      .values(group.map((miss) => ({ device_id: miss.deviceId, first_missed_at: miss.firstMissedAt })))
      .execute();
}
