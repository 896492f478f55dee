// What the two configuration tables (wg_peers, certificates) share about expiry: a renewal's
// new expiry (/extend) and the `configuration.expiring` pass's bookkeeping, one query for both.
import type { Selectable } from 'kysely';
import type { Db } from './database.js';
import type { Database } from './schema.js';

/** A new expiry for a configuration that has not expired by `now` (ATOM strings). */
export interface ExpiryChange {
  readonly now: string;
  readonly expiresAt: string;
  /** Whether no `configuration.expiring` is to come for the new expiry (src/core/expiry/warnings.ts). */
  readonly expiryWarned: boolean;
}

/** Configurations expiring after `now` and by `horizon` (now + expiryWarning), ATOM strings. */
export interface ExpiryWarningWindow {
  readonly now: string;
  readonly horizon: string;
}

/** The two tables of configurations, by the column that names a configuration. */
const KEY_COLUMN = { wg_peers: 'public_key', certificates: 'common_name' } as const;
export type ConfigurationTable = keyof typeof KEY_COLUMN;

/** Moves the expiry of a configuration that has not expired by `change.now`; false when there is no such one. */
export async function extendConfigurationRow(
  db: Db,
  table: ConfigurationTable,
  connectionId: string,
  change: ExpiryChange,
): Promise<boolean> {
  const result = await db
    .updateTable(table)
    .set({ expires_at: change.expiresAt, expiry_warned: change.expiryWarned ? 1 : 0 })
    .where(KEY_COLUMN[table], '=', connectionId)
    .where('expires_at', '>', change.now)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Records that `configuration.expiring` was announced; false when someone (another portal instance) did first. */
export async function markExpiryWarned(db: Db, table: ConfigurationTable, connectionId: string): Promise<boolean> {
  const result = await db
    .updateTable(table)
    .set({ expiry_warned: 1 })
    .where(KEY_COLUMN[table], '=', connectionId)
    .where('expiry_warned', '=', 0)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** The earliest expiry among the configurations whose `configuration.expiring` is still to come, or null. */
export async function earliestUnwarnedExpiry(db: Db, table: ConfigurationTable): Promise<string | null> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.min('expires_at').as('earliest'))
    .where('expiry_warned', '=', 0)
    .executeTakeFirst();
  return row?.earliest ?? null;
}

/** Configurations in `window` whose `configuration.expiring` is still to come, soonest first. */
export async function dueForExpiryWarning<T extends ConfigurationTable>(
  db: Db,
  table: T,
  window: ExpiryWarningWindow,
  limit: number,
): Promise<Selectable<Database[T]>[]> {
  const rows = await db
    .selectFrom(table as ConfigurationTable)
    .selectAll()
    .where('expiry_warned', '=', 0)
    .where('expires_at', '>', window.now)
    .where('expires_at', '<=', window.horizon)
    .orderBy('expires_at')
    .limit(limit)
    .execute();
  return rows as Selectable<Database[T]>[];
}
