// The PostgreSQL server's own time, read by the portal instances that share it: an instance
// whose clock is behind would judge an expired configuration still valid and put it back on the
// nodes until the sweep deletes it, so instances hold their clock to the server's
// (src/core/database-clock.ts). SQLite has no server: every instance on one file is on one host.
import { sql } from 'kysely';
import { isPostgres, type Db } from './database.js';

/** The database server's time now (clock_timestamp, not the transaction's start); null on SQLite. */
export async function databaseServerTime(db: Db): Promise<Date | null> {
  if (!isPostgres(db)) return null;
  const result = await sql<{ at: string }>`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::text AS at`.execute(
    db,
  );
  const millis = Number(result.rows[0]?.at);
  return Number.isFinite(millis) ? new Date(millis) : null;
}
