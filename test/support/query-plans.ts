// What the database's own planner would do with a query the portal runs, for the tests that
// hold a listing or a housekeeping statement to its index: SQLite's EXPLAIN QUERY PLAN, or
// PostgreSQL's EXPLAIN with sequential scans avoided where it can (as it would on a table of
// millions of rows, where a test's few rows would make a scan look cheaper).
import { CompiledQuery, type Kysely, PostgresAdapter, sql } from 'kysely';

/** The plan of `compiled` on `db` (the portal's database, or another such as an eduVPN one), one line per step. */
export async function queryPlan<Tables>(db: Kysely<Tables>, compiled: CompiledQuery): Promise<string> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) {
    const plan = await db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`EXPLAIN QUERY PLAN ${compiled.sql}`, [...compiled.parameters]),
    );
    return plan.rows.map((row) => row.detail).join('\n');
  }
  return db.transaction().execute(async (trx) => {
    await sql`SET LOCAL enable_seqscan = off`.execute(trx);
    const plan = await trx.executeQuery<{ 'QUERY PLAN': string }>(
      CompiledQuery.raw(`EXPLAIN ${compiled.sql}`, [...compiled.parameters]),
    );
    return plan.rows.map((row) => row['QUERY PLAN']).join('\n');
  });
}
