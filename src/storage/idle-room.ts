// Room for the portal's own work inside a large transaction on PostgreSQL. The server ends a
// transaction left idle for `databaseTimeout` (idle_in_transaction_session_timeout), so that a
// portal instance that froze or vanished holds its locks only that long. But a change of
// 150,000 configurations spends seconds of the portal's own time between two of its
// statements (building its events, its webhook deliveries, its receipts), several times that
// on a busy machine: the server ended it, and the destroy answered 503.
import { sql } from 'kysely';
import { isPostgres, type Db } from './database.js';

/** Below this many rows a transaction keeps the plain bound: a call's usual work is a few rows. */
const ROWS_WITHOUT_ROOM = 1_000;
/**
 * The portal's time per row between two statements, with room to spare: a 150,000-row destroy
 * spent at most 10 µs per row in one such gap on a quiet machine, about 50 µs on a loaded one.
 */
const ROOM_PER_ROW_MS = 0.2;

/**
 * Gives the rest of the transaction on `trx` room for the portal's work on `rows` rows between
 * its statements: the session's idle bound (as the connection was opened) plus ROOM_PER_ROW_MS
 * per row, for this transaction only (`set_config(…, true)`, as SET LOCAL). Asked again, the room
 * is that of the latest count, not a sum. Nothing on SQLite (no server waits on the portal),
 * outside a transaction, for few rows, or where the bound is off (0).
 */
export async function allowIdleForRows(trx: Db, rows: number): Promise<void> {
  if (rows < ROWS_WITHOUT_ROOM || !trx.isTransaction || !isPostgres(trx)) return;
  const roomMs = Math.ceil(rows * ROOM_PER_ROW_MS);
  // reset_val: the session's own value, which SET LOCAL leaves as it was.
  await sql`SELECT set_config(name, (reset_val::bigint + ${roomMs}::bigint)::text, true)
    FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout' AND reset_val <> '0'`.execute(trx);
}
