// Migration 0062 on the SCIM groups before it: each is given the key a directory's displayName
// filter compares by, lower-cased as Unicode has it, and a filter in another case finds it. Two
// groups whose names differ only in case share the key, and the filter answers both. Runs on
// SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { scimGroupsPage } from '../../src/storage/scim-groups.js';
import { migrationTestLocation } from '../support/postgres.js';

test('0062 keys the SCIM groups by their displayName in lower case, as Unicode lowers it', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, '0062'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0061-scim-directory-active');
  const at = '2026-03-01T09:00:00+00:00';
  const groups: [scimId: string, displayName: string][] = [
    ['g-1', 'Staff'],
    ['g-2', 'staff'],
    ['g-3', 'Équipe'],
    ['g-4', 'Students'],
  ];
  // Written as before 0062, without the key.
  for (const [scimId, displayName] of groups)
    await sql`INSERT INTO scim_groups (scim_id, display_name, external_id, created_at, updated_at)
      VALUES (${scimId}, ${displayName}, NULL, ${at}, ${at})`.execute(db);

  await migrateToLatest(db);
  const rows = await db.selectFrom('scim_groups').select(['scim_id', 'display_name_key']).orderBy('scim_id').execute();
  assert.deepEqual(
    rows.map((row) => [row.scim_id, row.display_name_key]),
    [
      ['g-1', 'staff'],
      ['g-2', 'staff'],
      ['g-3', 'équipe'],
      ['g-4', 'students'],
    ],
  );
  const staff = await scimGroupsPage(db, { displayName: 'STAFF' }, 0, 10);
  assert.deepEqual(
    staff.groups.map((group) => group.scimId),
    ['g-1', 'g-2'],
  );
  assert.equal((await scimGroupsPage(db, { displayName: 'ÉQUIPE' }, 0, 10)).groups[0]?.scimId, 'g-3');
});
