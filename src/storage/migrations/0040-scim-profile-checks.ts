// Why a directory user's profiles may still need taking: a group change that took members out
// notes each of them here in its own transaction (the change's id and when), and the note goes
// once their profiles were checked. A portal stopped or failing in between leaves the note for
// the reconcile pass, rather than users who keep for good the configurations their groups no
// longer grant.
import { PostgresAdapter, sql, type Expression, type Kysely, type Migration } from 'kysely';

export const scimProfileChecks: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
    // Bytewise comparison on PostgreSQL, as in 0001-initial: times are compared as text.
    const text = (type: `varchar(${number})`): Expression<unknown> => sql.raw(postgres ? `${type} collate "C"` : type);
    await db.schema.alterTable('scim_users').addColumn('profile_check', text('varchar(36)')).execute();
    await db.schema.alterTable('scim_users').addColumn('profile_check_at', text('varchar(32)')).execute();
    await db.schema.createIndex('scim_users_profile_check').on('scim_users').column('profile_check_at').execute();
  },
};
