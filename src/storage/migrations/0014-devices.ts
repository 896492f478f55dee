// Devices: a managed device the portal knows apart from its user, with the MDM's
// identifiers (serial, mdm_id), its platform and how it proves itself; its configurations name
// it (`device_id` on wg_peers and certificates), at most one live per profile, and enrollment
// tokens made for it name it too. Numbered 0014: the number this work was given.
import { PostgresAdapter, sql, type Expression, type Kysely, type Migration } from 'kysely';

export const devicesSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as in 0001-initial.
    const text = (type: 'text' | `varchar(${number})`): Expression<unknown> =>
      sql.raw(postgres ? `${type} collate "C"` : type);

    await db.schema
      .createTable('devices')
      .addColumn('device_id', text('varchar(32)'), (column) => column.primaryKey())
      // Destroying the user deletes its devices with it (their configurations went with the user).
      .addColumn('user_id', text('varchar(255)'), (column) =>
        column.notNull().references('users.user_id').onDelete('cascade'),
      )
      .addColumn('profile_id', text('varchar(255)'), (column) => column.notNull())
      .addColumn('platform', text('varchar(16)'), (column) => column.notNull())
      .addColumn('serial', text('varchar(255)'))
      .addColumn('mdm_id', text('varchar(255)'))
      // `token` until a certificate enrollment binds it; then the certificate's fields.
      .addColumn('identity', text('varchar(16)'), (column) => column.notNull())
      .addColumn('certificate_subject', text('text'))
      .addColumn('certificate_issuer', text('text'))
      .addColumn('certificate_serial', text('varchar(128)'))
      .addColumn('certificate_not_after', text('varchar(32)'))
      .addColumn('state', text('varchar(16)'), (column) => column.notNull())
      .addColumn('created_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('retired_at', text('varchar(32)'))
      .addColumn('last_seen_at', text('varchar(32)'))
      .execute();
    await db.schema.createIndex('devices_user_id').on('devices').column('user_id').execute();
    // An external identifier names one live device; a retired device's may be registered again.
    await db.schema
      .createIndex('devices_live_serial')
      .on('devices')
      .column('serial')
      .unique()
      .where(sql.raw<boolean>(`state <> 'retired' and serial is not null`))
      .execute();
    await db.schema
      .createIndex('devices_live_mdm_id')
      .on('devices')
      .column('mdm_id')
      .unique()
      .where(sql.raw<boolean>(`state <> 'retired' and mdm_id is not null`))
      .execute();

    for (const table of ['wg_peers', 'certificates', 'enrollment_tokens']) {
      await db.schema.alterTable(table).addColumn('device_id', text('varchar(32)')).execute();
      await db.schema.createIndex(`${table}_device_id`).on(table).column('device_id').execute();
    }
  },
};
