// A device may be suspended and resumed (src/core/devices/suspension.ts): the devices get the
// suspension's reason, time and author, and every change of a device's state is kept in
// `device_history` for the device's own page and the MDM compliance work to read. Devices that
// existed before get their registration (and retirement) as history, without an author. A
// suspension or resume changes the listings as a user's disable does: the listing journal
// (0020-listing-changes) gets the device's configurations from a trigger of its own.
// Numbered 0026: the number this work was given.
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

export const deviceSuspensionSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    const text = (type: 'text' | `varchar(${number})`) => sql.raw(postgres ? `${type} collate "C"` : type);
    await db.schema.alterTable('devices').addColumn('suspended_reason', text('varchar(200)')).execute();
    await db.schema.alterTable('devices').addColumn('suspended_at', text('varchar(32)')).execute();
    await db.schema.alterTable('devices').addColumn('suspended_by', text('varchar(255)')).execute();
    await db.schema
      .createTable('device_history')
      .addColumn('history_id', text('varchar(36)'), (column) => column.primaryKey())
      // Destroying the user deletes its devices, and their history with them.
      .addColumn('device_id', text('varchar(32)'), (column) =>
        column.notNull().references('devices.device_id').onDelete('cascade'),
      )
      .addColumn('at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('change', text('varchar(16)'), (column) => column.notNull())
      .addColumn('state_before', text('varchar(16)'))
      .addColumn('state_after', text('varchar(16)'), (column) => column.notNull())
      .addColumn('reason', text('varchar(200)'))
      .addColumn('changed_by', text('varchar(255)'))
      .addColumn('revocation_id', text('varchar(64)'))
      .execute();
    await db.schema.createIndex('device_history_device').on('device_history').columns(['device_id', 'at']).execute();
    // What was before history was kept: registrations and retirements, by no one recorded. The
    // ids are made from the device's own (unique, and sorting by registration time).
    await sql`
      INSERT INTO device_history (history_id, device_id, at, change, state_before, state_after, reason, changed_by, revocation_id)
      SELECT 'r-' || device_id, device_id, created_at, 'registered', NULL, 'registered', NULL, NULL, NULL
      FROM devices`.execute(db);
    await sql`
      INSERT INTO device_history (history_id, device_id, at, change, state_before, state_after, reason, changed_by, revocation_id)
      SELECT 'x-' || device_id, device_id, retired_at, 'retired', NULL, 'retired', NULL, NULL, NULL
      FROM devices WHERE state = 'retired' AND retired_at IS NOT NULL`.execute(db);
    await (postgres ? journalPostgres(db) : journalSqlite(db));
  },
};

/** Whether the device's configurations stop or start being listed: into or out of `suspended`. */
const SUSPENSION_CHANGED = "(OLD.state = 'suspended') <> (NEW.state = 'suspended')";
const DEVICE_PEERS = 'SELECT profile_id, created_at, public_key FROM wg_peers WHERE device_id = NEW.device_id';

async function journalSqlite(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(`CREATE TRIGGER listing_changes_device_state AFTER UPDATE OF state ON devices WHEN ${SUSPENSION_CHANGED} BEGIN
      INSERT INTO listing_changes (profile_id, created_at, public_key) ${DEVICE_PEERS}; END`)
    .execute(db);
}

async function journalPostgres(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(`CREATE FUNCTION listing_changes_of_device() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO listing_changes (profile_id, created_at, public_key) ${DEVICE_PEERS};
      RETURN NULL;
    END $$`)
    .execute(db);
  await sql
    .raw(`CREATE TRIGGER listing_changes_device_state AFTER UPDATE OF state ON devices
      FOR EACH ROW WHEN (${SUSPENSION_CHANGED}) EXECUTE FUNCTION listing_changes_of_device()`)
    .execute(db);
}
