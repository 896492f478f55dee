// Queries on `device_history`: every change of a device's state (registered, enrolled, suspended,
// resumed, retired), with its reason and author, written in the transaction of the change
// (src/core/devices/), read by the device's page and by the resume that needs the state a
// suspension interrupted. Rows go with their device (a destroyed user's).
import type { Selectable } from 'kysely';
import {
  asDeviceId,
  asProfileId,
  asRevocationId,
  type DeviceId,
  type ProfileId,
  type RevocationId,
} from '../shared/ids.js';
import { timeOrderedId } from '../shared/time-ordered-id.js';
import type { Db } from './database.js';
import type { DeviceState } from './devices.js';
import type { DeviceHistoryTable } from './schema.js';

export const DEVICE_CHANGES = ['registered', 'enrolled', 'suspended', 'resumed', 'retired'] as const;
export type DeviceChange = (typeof DEVICE_CHANGES)[number];

export interface DeviceHistoryEntry {
  readonly deviceId: DeviceId;
  /** ATOM. */
  readonly at: string;
  readonly change: DeviceChange;
  /** null for a registration, and for entries from before the history was kept. */
  readonly stateBefore: DeviceState | null;
  readonly stateAfter: DeviceState;
  readonly reason: string | null;
  /** Who made it: an admin key's name, `(portal)`, `mdm`, …; null when not recorded. */
  readonly by: string | null;
  /** The revocation receipt of the configurations it took off the nodes, if any. */
  readonly revocationId: RevocationId | null;
  /**
   * `enrolled`: the profile of the configuration issued (a key limited to other profiles is not
   * shown the entry); absent or null for the other changes, and for entries from before it was kept.
   */
  readonly profileId?: ProfileId | null;
}

export async function insertDeviceHistory(db: Db, entry: DeviceHistoryEntry): Promise<void> {
  await db
    .insertInto('device_history')
    .values({
      history_id: timeOrderedId(Date.parse(entry.at)),
      device_id: entry.deviceId,
      at: entry.at,
      change: entry.change,
      state_before: entry.stateBefore,
      state_after: entry.stateAfter,
      reason: entry.reason,
      changed_by: entry.by,
      revocation_id: entry.revocationId,
      profile_id: entry.profileId ?? null,
    })
    .execute();
}

/** A device's history, oldest first. */
export async function deviceHistory(db: Db, deviceId: DeviceId): Promise<DeviceHistoryEntry[]> {
  const rows = await db
    .selectFrom('device_history')
    .selectAll()
    .where('device_id', '=', deviceId)
    .orderBy('at')
    .orderBy('history_id')
    .execute();
  return rows.map(toEntry);
}

/**
 * The device's latest suspension, its receipt's; `interrupting`: the one that ended a registered
 * or active state (what a resume returns it to), not an administrator's taking it over.
 * Undefined when it was never suspended.
 */
export async function lastSuspension(
  db: Db,
  deviceId: DeviceId,
  which: 'any' | 'interrupting' = 'any',
): Promise<DeviceHistoryEntry | undefined> {
  let query = db
    .selectFrom('device_history')
    .selectAll()
    .where('device_id', '=', deviceId)
    .where('change', '=', 'suspended');
  if (which === 'interrupting') query = query.where('state_before', '<>', 'suspended');
  const row = await query.orderBy('at', 'desc').orderBy('history_id', 'desc').limit(1).executeTakeFirst();
  return row === undefined ? undefined : toEntry(row);
}

function toEntry(row: Selectable<DeviceHistoryTable>): DeviceHistoryEntry {
  return {
    deviceId: asDeviceId(row.device_id),
    at: row.at,
    change: row.change as DeviceChange,
    stateBefore: row.state_before as DeviceState | null,
    stateAfter: row.state_after as DeviceState,
    reason: row.reason,
    by: row.changed_by,
    revocationId: row.revocation_id === null ? null : asRevocationId(row.revocation_id),
    profileId: row.profile_id === null ? null : asProfileId(row.profile_id),
  };
}
