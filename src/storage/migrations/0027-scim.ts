// SCIM provisioning (src/core/directory/): the directory's view of a portal user (its SCIM id,
// the directory's externalId, and the attributes the directory sent, which a SCIM client reads
// back), the directory's groups and their members. A SCIM user is a link to a row of `users`:
// destroying the user removes the link and its memberships with it.
import { PostgresAdapter, sql, type Expression, type Kysely, type Migration } from 'kysely';

export const scimSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as in 0001-initial.
    const text = (type: 'text' | `varchar(${number})`): Expression<unknown> =>
      sql.raw(postgres ? `${type} collate "C"` : type);

    await db.schema
      .createTable('scim_users')
      .addColumn('scim_id', text('varchar(36)'), (column) => column.primaryKey())
      .addColumn('user_id', text('varchar(255)'), (column) =>
        column.notNull().unique().references('users.user_id').onDelete('cascade'),
      )
      .addColumn('external_id', text('text'))
      // The resource as the directory last sent it (JSON), without what the portal owns: id, meta, active.
      .addColumn('attributes', text('text'), (column) => column.notNull())
      .addColumn('created_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('updated_at', text('varchar(32)'), (column) => column.notNull())
      .execute();
    await db.schema
      .createTable('scim_groups')
      .addColumn('scim_id', text('varchar(36)'), (column) => column.primaryKey())
      .addColumn('display_name', text('varchar(255)'), (column) => column.notNull().unique())
      .addColumn('external_id', text('text'))
      .addColumn('created_at', text('varchar(32)'), (column) => column.notNull())
      .addColumn('updated_at', text('varchar(32)'), (column) => column.notNull())
      .execute();
    await db.schema
      .createTable('scim_group_members')
      .addColumn('group_id', text('varchar(36)'), (column) =>
        column.notNull().references('scim_groups.scim_id').onDelete('cascade'),
      )
      .addColumn('member_id', text('varchar(36)'), (column) =>
        column.notNull().references('scim_users.scim_id').onDelete('cascade'),
      )
      .addPrimaryKeyConstraint('scim_group_members_pk', ['group_id', 'member_id'])
      .execute();
    await db.schema.createIndex('scim_group_members_member').on('scim_group_members').column('member_id').execute();
  },
};
