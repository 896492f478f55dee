// A user's configurations revoked on PostgreSQL in pages of their keys: one statement for
// 150,000 of them ran past `databaseTimeout` on a busy server. One machinery for both tables
// (WireGuard peers by public key, OpenVPN certificates by common name).
import { sql, type RawBuilder } from 'kysely';
import { appendAll } from '../shared/append-all.js';
import type { UserId } from '../shared/ids.js';
import type { Db } from './database.js';
import { allowIdleForRows } from './idle-room.js';

/** A table of a user's configurations, and the key its pages go by. */
export type UserRows =
  | { readonly table: 'wg_peers'; readonly key: 'public_key' }
  | { readonly table: 'certificates'; readonly key: 'common_name' };

export const PEER_ROWS: UserRows = { table: 'wg_peers', key: 'public_key' };
export const CERTIFICATE_ROWS: UserRows = { table: 'certificates', key: 'common_name' };

/** Keys a revocation's statement on PostgreSQL takes at most. */
const PAGE_OF_USER = 5_000;

/**
 * One page: the WITH clauses `picked` (the keys after `after`, PAGE_OF_USER at most) and `paged`
 * (`change` done to them; `stamp` gives peers their removal's revision), and the columns its
 * statement answers: the rows changed, how many keys it picked and the last. Only a page that
 * picked PAGE_OF_USER keys may have one after it: a statement skips a row another transaction
 * deleted while it waited, so it may return fewer rows than it picked, which is no sign of the end.
 */
export function pageOfUser(
  rows: UserRows,
  userId: UserId,
  after: string | null,
  change: 'stamp' | 'delete',
): { readonly clauses: RawBuilder<unknown>; readonly counts: RawBuilder<unknown> } {
  const table = sql.table(rows.table);
  const key = sql.ref(rows.key);
  const afterKey = after === null ? sql`` : sql` AND ${key} > ${after}`;
  const paged =
    change === 'stamp'
      ? sql`UPDATE ${table} SET revision = nextval('change_revision') WHERE ${key} IN (SELECT ${key} FROM picked) RETURNING *`
      : sql`DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM picked) RETURNING *`;
  return {
    clauses: sql`picked AS (SELECT ${key} FROM ${table} WHERE user_id = ${userId}${afterKey} ORDER BY ${key} LIMIT ${PAGE_OF_USER}),
      paged AS (${paged})`,
    counts: sql`(SELECT coalesce(json_agg(paged), '[]'::json) FROM paged) AS paged,
      (SELECT count(*) FROM picked)::integer AS picked, (SELECT max(${key}) FROM picked) AS last_picked`,
  };
}

/** What a page's statement answers (pageOfUser). */
export interface PageOfUserAnswer<Row> {
  readonly paged: Row[];
  readonly picked: number;
  readonly last_picked: string | null;
}

/** The key after which the next page starts, or null when this page was the last. */
export function nextPageAfter(answer: PageOfUserAnswer<unknown>): string | null {
  return answer.picked < PAGE_OF_USER ? null : answer.last_picked;
}

/**
 * Runs pages of `change` from the key after `after` (null: from the first) on, and answers the
 * rows they returned; in a transaction, with room for the caller's work on them (idle-room.ts).
 */
export async function remainingPagesOfUser<Row>(
  db: Db,
  rows: UserRows,
  userId: UserId,
  after: string | null,
  change: 'stamp' | 'delete',
): Promise<Row[]> {
  const changed: Row[] = [];
  let next = after;
  do {
    const page = pageOfUser(rows, userId, next, change);
    const { rows: answers } = await sql<PageOfUserAnswer<Row>>`WITH ${page.clauses} SELECT ${page.counts}`.execute(db);
    const answer = answers[0];
    if (answer === undefined) throw new Error(`a page of a user’s ${rows.table} answered no row`);
    appendAll(changed, answer.paged);
    next = nextPageAfter(answer);
  } while (next !== null);
  // The caller's work on so many rows (releasing addresses, announcing them) comes next.
  await allowIdleForRows(db, changed.length);
  return changed;
}
