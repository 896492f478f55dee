// The listing journal: which configurations a committed change touched, so that a cached listing
// rebuilds only the pages holding them (src/core/listings/pages.ts) instead of all 100,000
// configurations after every change. Written by triggers, not by the portal's code: every
// writer (this instance, another one, a hand edit, `db copy`) is journaled alike, and a create
// pays one small insert in its own statement. On PostgreSQL each row carries its transaction's
// id, so a reader can tell which rows may still appear (the transactions that were running
// when it last read) without trusting the order of serial ids, which is not commit order.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

/** The columns of wg_peers whose change can alter a listing (not revision, expiry_warned, device_id). */
const LISTED_COLUMNS = 'user_id, profile_id, display_name, ip_four, ip_six, created_at, expires_at, auth_key';

export const listingChangesSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    if (db.getExecutor().adapter instanceof PostgresAdapter) await postgres(db);
    else await sqlite(db);
  },
};

async function sqlite(db: Kysely<unknown>): Promise<void> {
  // AUTOINCREMENT: an id is never used twice, also after pruning deleted the newest rows.
  await sql`CREATE TABLE listing_changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    profile_id TEXT NOT NULL, created_at TEXT NOT NULL, public_key TEXT NOT NULL,
    recorded_at INTEGER NOT NULL DEFAULT (unixepoch()))`.execute(db);
  await sql`CREATE INDEX listing_changes_recorded ON listing_changes (recorded_at)`.execute(db);
  const row = (record: 'NEW' | 'OLD') =>
    `INSERT INTO listing_changes (profile_id, created_at, public_key) VALUES (${record}.profile_id, ${record}.created_at, ${record}.public_key);`;
  await sql
    .raw(`CREATE TRIGGER listing_changes_peer_insert AFTER INSERT ON wg_peers BEGIN ${row('NEW')} END`)
    .execute(db);
  await sql
    .raw(`CREATE TRIGGER listing_changes_peer_delete AFTER DELETE ON wg_peers BEGIN ${row('OLD')} END`)
    .execute(db);
  await sql
    .raw(
      `CREATE TRIGGER listing_changes_peer_update AFTER UPDATE OF ${LISTED_COLUMNS} ON wg_peers BEGIN ${row('OLD')} ${row('NEW')} END`,
    )
    .execute(db);
  await sql
    .raw(`CREATE TRIGGER listing_changes_user_state AFTER UPDATE OF is_disabled ON users WHEN OLD.is_disabled IS NOT NEW.is_disabled BEGIN
      INSERT INTO listing_changes (profile_id, created_at, public_key) SELECT profile_id, created_at, public_key FROM wg_peers WHERE user_id = NEW.user_id; END`)
    .execute(db);
}

async function postgres(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE TABLE listing_changes (
    id BIGSERIAL PRIMARY KEY,
    xid XID8 NOT NULL DEFAULT pg_current_xact_id(),
    profile_id TEXT NOT NULL, created_at TEXT NOT NULL, public_key TEXT NOT NULL,
    recorded_at BIGINT NOT NULL DEFAULT extract(epoch FROM now())::bigint)`.execute(db);
  await sql`CREATE INDEX listing_changes_xid ON listing_changes (xid)`.execute(db);
  await sql`CREATE INDEX listing_changes_recorded ON listing_changes (recorded_at)`.execute(db);
  // No insert trigger on PostgreSQL: with one, concurrent creates waited on their address
  // pool's row past the statement timeout (bench/README.md); a create journals its
  // configuration itself before it takes the pool (src/storage/listing-changes.ts).
  await sql`CREATE FUNCTION listing_changes_of_peer() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO listing_changes (profile_id, created_at, public_key) VALUES (OLD.profile_id, OLD.created_at, OLD.public_key);
      IF TG_OP = 'UPDATE' THEN
        INSERT INTO listing_changes (profile_id, created_at, public_key) VALUES (NEW.profile_id, NEW.created_at, NEW.public_key);
      END IF;
      RETURN NULL;
    END $$`.execute(db);
  await sql
    .raw(`CREATE TRIGGER listing_changes_peer AFTER DELETE OR UPDATE OF ${LISTED_COLUMNS} ON wg_peers
      FOR EACH ROW EXECUTE FUNCTION listing_changes_of_peer()`)
    .execute(db);
  await sql`CREATE FUNCTION listing_changes_of_user() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO listing_changes (profile_id, created_at, public_key) SELECT profile_id, created_at, public_key FROM wg_peers WHERE user_id = NEW.user_id;
      RETURN NULL;
    END $$`.execute(db);
  await sql`CREATE TRIGGER listing_changes_user_state AFTER UPDATE OF is_disabled ON users
      FOR EACH ROW WHEN (OLD.is_disabled IS DISTINCT FROM NEW.is_disabled) EXECUTE FUNCTION listing_changes_of_user()`.execute(
    db,
  );
}
