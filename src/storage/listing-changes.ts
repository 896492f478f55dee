// Reading the listing journal (migration 0020): the configurations that committed changes
// touched since a reader last looked. SQLite has one writer at a time, so ids are taken in
// commit order and "after the last id seen" misses nothing. PostgreSQL takes ids (and
// transaction ids) before commit, in any order; a reader therefore asks again for every row of a
// transaction that was still running at its last read (xid at or above that read's snapshot
// xmin) and skips the ones it already saw.
import { sql } from 'kysely';
import { isPostgres, type Db } from './database.js';
import type { ProfileId } from '../shared/ids.js';

/** How long the journal keeps a row; a reader that has not looked for half of it starts afresh. */
export const LISTING_JOURNAL_SECONDS = 3600;

/** A configuration a change touched: where it is (or was) in its profile's listing. */
export interface ListingChange {
  readonly profileId: ProfileId;
  readonly createdAt: string;
  readonly publicKey: string;
}

/** Where a reader is in the journal. */
export type JournalCursor =
  | { readonly dialect: 'sqlite'; readonly lastId: number }
  | { readonly dialect: 'postgres'; readonly horizon: bigint; readonly seen: ReadonlyMap<string, bigint> };

interface JournalRow {
  readonly id: string | number | null;
  readonly xid: string | null;
  readonly horizon: string | null;
  readonly profile_id: ProfileId | null;
  readonly created_at: string | null;
  readonly public_key: string | null;
}

/**
 * The changes committed since `cursor` (all of them as far as the journal goes back; null: only
 * where the journal is now), and the cursor to read from next time.
 */
export async function readListingChanges(
  db: Db,
  cursor: JournalCursor | null,
): Promise<{ changes: ListingChange[]; cursor: JournalCursor }> {
  if (!isPostgres(db)) {
    const after = cursor?.dialect === 'sqlite' ? cursor.lastId : null;
    if (after === null) {
      const row = (await sql<{ last: number | null }>`SELECT max(id) AS last FROM listing_changes`.execute(db)).rows[0];
      return { changes: [], cursor: { dialect: 'sqlite', lastId: row?.last ?? 0 } };
    }
    const { rows } =
      await sql<JournalRow>`SELECT id, profile_id, created_at, public_key FROM listing_changes WHERE id > ${after} ORDER BY id`.execute(
        db,
      );
    const lastId = rows.length === 0 ? after : Number(rows.at(-1)?.id);
    return { changes: rows.map(toChange), cursor: { dialect: 'sqlite', lastId } };
  }
  // One statement, so the rows and the horizon come from one snapshot. A first read reports
  // nothing, but it still notes the rows of transactions at or above its horizon: the next read
  // asks for those again and must not take them for news (a needless rebuild of every page
  // they are on whenever any transaction of the cluster was running at the first read).
  const from = cursor?.dialect === 'postgres' ? cursor.horizon : null;
  const { rows } =
    from === null
      ? await sql<JournalRow>`SELECT now_.horizon::text AS horizon, c.id, c.xid::text AS xid, c.profile_id, c.created_at, c.public_key
          FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS horizon) AS now_
          LEFT JOIN listing_changes AS c ON c.xid >= now_.horizon`.execute(db)
      : await sql<JournalRow>`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon, c.id, c.xid::text AS xid, c.profile_id, c.created_at, c.public_key
          FROM (SELECT 1) AS one LEFT JOIN listing_changes AS c ON c.xid >= ${String(from)}::xid8`.execute(db);
  const horizon = BigInt(rows[0]?.horizon ?? '0');
  const before = cursor?.dialect === 'postgres' ? cursor.seen : null;
  const seen = new Map<string, bigint>();
  const changes: ListingChange[] = [];
  for (const row of rows) {
    if (row.id === null || row.xid === null) continue;
    const id = String(row.id);
    const xid = BigInt(row.xid);
    // A row of a transaction below the new horizon cannot come back; forget it.
    if (xid >= horizon) seen.set(id, xid);
    if (before !== null && !before.has(id)) changes.push(toChange(row));
  }
  return { changes, cursor: { dialect: 'postgres', horizon, seen } };
}

function toChange(row: JournalRow): ListingChange {
  return { profileId: row.profile_id as ProfileId, createdAt: row.created_at ?? '', publicKey: row.public_key ?? '' };
}

/** Deletes journal rows older than `seconds` (a reader that has not looked for half that long starts afresh). */
export async function pruneListingChanges(db: Db, seconds: number): Promise<number> {
  const result = isPostgres(db)
    ? await sql`DELETE FROM listing_changes WHERE recorded_at < extract(epoch FROM now())::bigint - ${seconds}`.execute(
        db,
      )
    : await sql`DELETE FROM listing_changes WHERE recorded_at < unixepoch() - ${seconds}`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}
