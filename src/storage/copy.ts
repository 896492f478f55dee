// `vpn-portal db copy`: moves a portal's data from one database to another, typically from
// the embedded SQLite file to PostgreSQL when a second portal instance is added. Both ends
// are brought to the latest schema first; every table is copied in foreign-key order, in
// batches, inside one transaction on the target, and the row counts are compared before
// that transaction commits, so the target ends up with all of the data or none of it.
import { sql, type Transaction } from 'kysely';
import { isPostgres, type Db } from './database.js';
import { advanceRevisionTo, latestRevision } from './revisions.js';
import type { Database } from './schema.js';

/**
 * Every table, parents before children; with the primary key that orders the batches.
 * `bookkeeping` tables are written by a portal on its own as soon as it starts (statistics,
 * when housekeeping last ran): the target's rows there are replaced, not a reason to refuse.
 */
export const COPIED_TABLES: readonly {
  readonly table: keyof Database;
  readonly key: readonly string[];
  readonly bookkeeping?: true;
}[] = [
  { table: 'users', key: ['user_id'] },
  { table: 'oauth_authorizations', key: ['auth_key'] },
  { table: 'wg_peers', key: ['public_key'] },
  { table: 'ip_pools', key: ['profile_id', 'node_number', 'range_four', 'range_six'] },
  { table: 'ip_pool_free', key: ['profile_id', 'node_number', 'range_four', 'range_six', 'pool_index'] },
  { table: 'certificates', key: ['common_name'] },
  { table: 'connection_log', key: ['log_id'] },
  { table: 'node_resets', key: ['node_number'] },
  { table: 'live_stats', key: ['date_time', 'profile_id'], bookkeeping: true },
  { table: 'aggregate_stats', key: ['date', 'profile_id'], bookkeeping: true },
  { table: 'portal_state', key: ['key'], bookkeeping: true },
  { table: 'admin_keys', key: ['key_id'] },
  { table: 'audit_log', key: ['audit_id'] },
  { table: 'idempotency_records', key: ['key_lineage', 'idempotency_key'] },
  { table: 'webhooks', key: ['webhook_id'] },
  { table: 'webhook_deliveries', key: ['delivery_id'] },
  { table: 'webhook_attempts', key: ['delivery_id', 'attempt'] },
  { table: 'listing_generation', key: ['shard'], bookkeeping: true },
  { table: 'enrollment_tokens', key: ['token_id'] },
  { table: 'revocations', key: ['revocation_id'] },
  { table: 'revocation_nodes', key: ['revocation_id', 'node_number', 'connection_id'] },
  { table: 'devices', key: ['device_id'] },
  // Each device's changes of state (registered, enrolled, suspended, resumed, retired).
  { table: 'device_history', key: ['history_id'] },
  // Sign-ins to the console: a copy keeps the administrators signed in.
  { table: 'console_sessions', key: ['session_hash'] },
  // The CAs revocation lists are verified with, and which held lists an administrator confirmed.
  { table: 'certificate_authorities', key: ['fingerprint'] },
  { table: 'revocation_list_holds', key: ['sha256'] },
  { table: 'revocation_list_sources', key: ['location'] },
  // Legal holds: what the housekeeping must keep past its retention.
  { table: 'legal_holds', key: ['hold_id'] },
  // Sessions being accounted for, and the Accounting-Requests not yet acknowledged.
  { table: 'radius_sessions', key: ['acct_session_id'] },
  { table: 'radius_outbox', key: ['record_id'] },
  // Which NAT mapping each node had when: abuse reports about past moments are read through it.
  { table: 'nat_mappings', key: ['node_number', 'applied_at'] },
  // What the directory provisioned through SCIM: its users (links to users), groups and members.
  { table: 'scim_users', key: ['scim_id'] },
  { table: 'scim_groups', key: ['scim_id'] },
  { table: 'scim_group_members', key: ['group_id', 'member_id'] },
  // What the eduVPN import brought: a later import leaves what of it was removed here.
  { table: 'imported_records', key: ['kind', 'record_id'] },
  // Who was destroyed here, by a digest of the id: the import never brings them back.
  { table: 'destroyed_users', key: ['user_digest'] },
  // The devices the last inventory pass missed: the next pass retires those it misses again.
  { table: 'mdm_inventory_misses', key: ['device_id'] },
];

/**
 * Tables that are not copied row by row: SQLite's revision counter (PostgreSQL has a sequence
 * instead); the listing journal, which the copy's own inserts fill; the changes' commit markers,
 * read back only within seconds of their change by the instance that made it.
 */
const NOT_COPIED = new Set(['change_revision', 'listing_changes', 'change_markers']);

/** Rows per SELECT and per INSERT: 13 columns × 1,000 stays far below both dialects' parameter limits. */
const BATCH_ROWS = 1000;

export class CopyRefused extends Error {
  override readonly name = 'CopyRefused';
}

export interface CopiedTable {
  readonly table: string;
  readonly rows: number;
}

type Row = Record<string, unknown>;
// Tables are named at run time here; the row types are the schema's, copied as they are.
type AnyTransaction = Transaction<Record<string, Row>>;

/**
 * Copies every row of `source` into `target`, which must hold no data (bookkeeping aside).
 * Throws `CopyRefused` when it does, and an Error (after rolling the target back) when the counts do not match.
 */
export async function copyDatabase(
  source: Db,
  target: Db,
  progress: (copied: CopiedTable) => void = () => {},
): Promise<CopiedTable[]> {
  // The source is read in one transaction, so the copy is one consistent picture of it even
  // if a portal still writes to it (it should be stopped: its later writes are not copied).
  // "Every table": a table a later migration adds must be added to COPIED_TABLES too.
  const known = new Set<string>(COPIED_TABLES.map(({ table }) => table));
  const unknown = (await source.introspection.getTables())
    .map((table) => table.name)
    .filter((name) => !known.has(name) && !NOT_COPIED.has(name) && !name.startsWith('kysely_'));
  if (unknown.length > 0)
    throw new Error(`db copy does not know the table(s) ${unknown.join(', ')}; nothing was copied`);

  // Read only: on SQLite it takes no write lock, so a portal still running is not held up.
  const reading = source.transaction().setAccessMode('read only');
  const sourceTransaction = isPostgres(source) ? reading.setIsolationLevel('repeatable read') : reading;
  return sourceTransaction.execute(async (sourceTrx) =>
    target.transaction().execute(async (targetTrx) => {
      const reader = sourceTrx as unknown as AnyTransaction;
      const writer = targetTrx as unknown as AnyTransaction;
      const occupied: string[] = [];
      for (const { table, bookkeeping } of COPIED_TABLES) {
        if (bookkeeping === true) continue;
        const rows = await countRows(writer, table);
        if (rows > 0) occupied.push(`${table}: ${rows} rows`);
      }
      if (occupied.length > 0) {
        throw new CopyRefused(
          `the target database is not empty (${occupied.join(', ')}); db copy only fills an empty database`,
        );
      }
      for (const { table, bookkeeping } of COPIED_TABLES) {
        if (bookkeeping === true) await writer.deleteFrom(table).execute();
      }

      const copied: CopiedTable[] = [];
      for (const { table, key } of COPIED_TABLES) {
        const expected = await countRows(reader, table);
        const rows = await copyTable(reader, writer, table, key);
        const stored = await countRows(writer, table);
        if (rows !== expected || stored !== expected) {
          throw new Error(
            `db copy: ${table} has ${expected} rows in the source but ${stored} in the target; nothing was copied`,
          );
        }
        copied.push({ table, rows: stored });
        progress({ table, rows: stored });
      }
      // The copy's revisions go on from the source's (src/storage/revisions.ts).
      await advanceRevisionTo(targetTrx, await latestRevision(sourceTrx));
      return copied;
    }),
  );
}

async function copyTable(
  reader: AnyTransaction,
  writer: AnyTransaction,
  table: string,
  key: readonly string[],
): Promise<number> {
  let copied = 0;
  let last: Row | undefined;
  for (;;) {
    // Keyset pagination: each batch starts after the last key of the one before.
    let query = reader.selectFrom(table).selectAll();
    for (const column of key) query = query.orderBy(column);
    if (last !== undefined) {
      const after = last;
      query = query.where(
        sql<boolean>`(${sql.join(key.map((column) => sql.ref(column)))}) > (${sql.join(key.map((column) => after[column]))})`,
      );
    }
    const rows = await query.limit(BATCH_ROWS).execute();
    if (rows.length === 0) return copied;
    await writer.insertInto(table).values(rows).execute();
    copied += rows.length;
    last = rows[rows.length - 1];
  }
}

async function countRows(db: AnyTransaction, table: string): Promise<number> {
  const row = await db.selectFrom(table).select(sql<number | string>`COUNT(*)`.as('count')).executeTakeFirstOrThrow();
  // PostgreSQL returns COUNT(*) as a bigint, which pg hands over as a string.
  return Number(row['count']);
}
