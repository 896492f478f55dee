// A directory finding its user by userName, in any case (`GET /Users?filter=userName eq "…"`,
// and every POST before it makes one), reads the index of the users' name keys on both
// databases, not every SCIM user: asked of the database's own planner with the very queries the
// portal runs, over a directory of users. PostgreSQL keeps statistics of its tables by itself,
// and is given them here; SQLite plans without, as in use.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { isPostgres, type Db } from '../../src/storage/database.js';
import { scimUserNamedQuery, scimUsersMatchingQuery } from '../../src/storage/scim-users.js';
import { scimNameKey } from '../../src/storage/scim-name-key.js';
import { queryPlan } from '../support/query-plans.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

const DIRECTORY = 2000;
const AT = '2026-03-01T12:00:00+00:00';

let portal: TestPortal;
let db: Db;

before(async () => {
  portal = await startTestPortal();
  db = portal.portal.ctx.db;
  const names = Array.from({ length: DIRECTORY }, (_, index) => `Person.${index}@Example.org`);
  for (let start = 0; start < DIRECTORY; start += 500) {
    const batch = names.slice(start, start + 500);
    await db
      .insertInto('users')
      .values(batch.map((userId) => ({ user_id: userId, created_at: AT, last_seen: AT })))
      .execute();
    await db
      .insertInto('scim_users')
      .values(
        batch.map((userId, index) => ({
          scim_id: `00000000-0000-4000-8000-${String(start + index).padStart(12, '0')}`,
          user_id: userId,
          user_name_key: scimNameKey(userId),
          external_id: `ext-${start + index}`,
          attributes: '{}',
          created_at: AT,
          updated_at: AT,
        })),
      )
      .execute();
  }
  if (isPostgres(db)) await sql`ANALYZE users, scim_users`.execute(db);
});
after(() => portal.close());

const fullScan = /\bSCAN scim_users\b(?! USING)|Seq Scan on scim_users/;
const byNameKey =
  /SEARCH scim_users USING INDEX scim_users_user_name_key \(user_name_key=\?\)|scim_users_user_name_key on scim_users[\s\S]*Index Cond: \(user_name_key = /;

test('a userName in another case is looked up in the index of name keys, for a list filter and for a POST', async () => {
  for (const query of [
    scimUserNamedQuery(db, 'person.1234@example.org'),
    scimUsersMatchingQuery(db, { userName: 'PERSON.1234@EXAMPLE.ORG' }),
  ]) {
    const plan = await queryPlan(db, query.compile());
    assert.match(plan, byNameKey, plan);
    assert.doesNotMatch(plan, fullScan, plan);
  }
  const found = await scimUserNamedQuery(db, 'person.1234@example.org').select('scim_users.user_id').execute();
  assert.deepEqual(
    found.map((row) => row.user_id),
    ['Person.1234@Example.org'],
  );
});
