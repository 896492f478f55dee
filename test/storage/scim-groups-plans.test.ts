// A directory finding its group by displayName, in any case (`GET /Groups?filter=displayName eq
// "…"`, which Entra ID and Okta send for each group they push), reads the index of the groups'
// name keys on both databases, not every group; asking which groups a user is in (`members eq
// "…"`) reads the index of the members' ids, not every group or membership: asked of the
// database's own planner with the query the portal runs, over a directory of groups. PostgreSQL
// keeps statistics of its tables by itself, and is given them here; SQLite plans without, as in use.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { isPostgres, type Db } from '../../src/storage/database.js';
import {
  insertScimGroup,
  scimGroupsNamedQuery,
  scimGroupsOfMemberQuery,
  scimGroupsPage,
  setScimGroupMembers,
} from '../../src/storage/scim-groups.js';
import { queryPlan } from '../support/query-plans.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

const GROUPS = 2000;
const PEOPLE = 500;
const AT = '2026-03-01T12:00:00+00:00';

const groupId = (index: number) => `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`;
const scimIdOfPerson = (index: number) => `00000000-0000-4000-9000-${String(index).padStart(12, '0')}`;

let portal: TestPortal;
let db: Db;

before(async () => {
  portal = await startTestPortal();
  db = portal.portal.ctx.db;
  for (let index = 0; index < GROUPS; index += 1)
    await insertScimGroup(db, {
      scimId: groupId(index),
      displayName: index === 7 ? 'Équipe Réseau' : `VPN-Staff-${index}`,
      externalId: null,
      createdAt: AT,
      updatedAt: AT,
    });
  // A directory of people, each in a few groups; person 0 in three.
  const people = Array.from({ length: PEOPLE }, (_, index) => `person-${index}`);
  await db
    .insertInto('users')
    .values(people.map((userId) => ({ user_id: userId, created_at: AT, last_seen: AT })))
    .execute();
  await db
    .insertInto('scim_users')
    .values(
      people.map((userId, index) => ({
        scim_id: scimIdOfPerson(index),
        user_id: userId,
        user_name_key: userId,
        external_id: null,
        attributes: '{}',
        created_at: AT,
        updated_at: AT,
      })),
    )
    .execute();
  for (let index = 0; index < GROUPS; index += 1)
    await setScimGroupMembers(
      db,
      groupId(index),
      [index % PEOPLE, (index * 7) % PEOPLE, (index * 13 + 1) % PEOPLE].map(scimIdOfPerson),
    );
  if (isPostgres(db)) await sql`ANALYZE scim_groups, scim_group_members, scim_users, users`.execute(db);
});
after(() => portal.close());

const fullScan = /\bSCAN scim_groups\b(?! USING)|Seq Scan on scim_groups/;
const byNameKey =
  /SEARCH scim_groups USING (COVERING )?INDEX scim_groups_by_name_key \(display_name_key=\?\)|scim_groups_by_name_key on scim_groups[\s\S]*Index Cond: \(display_name_key = /;

test('a displayName in another case is looked up in the index of name keys', async () => {
  const plan = await queryPlan(db, scimGroupsNamedQuery(db, 'vpn-staff-1234').selectAll().compile());
  assert.match(plan, byNameKey, plan);
  assert.doesNotMatch(plan, fullScan, plan);
  const found = await scimGroupsPage(db, { displayName: 'ÉQUIPE RÉSEAU' }, 0, 10);
  assert.deepEqual(
    found.groups.map((group) => group.displayName),
    ['Équipe Réseau'],
  );
  assert.equal(found.total, 1);
});

const fullMembersScan = /\bSCAN scim_group_members\b(?! USING)|Seq Scan on scim_group_members/;
const byMember =
  /SEARCH scim_group_members USING (COVERING )?INDEX scim_group_members_member \(member_id=\?\)|Index (Only )?Scan (on|using) scim_group_members_member\b[\s\S]*Index Cond: \(\(?member_id\b/;
const groupById =
  /SEARCH scim_groups USING (COVERING )?INDEX sqlite_autoindex_scim_groups_1 \(scim_id=\?\)|Index Scan using scim_groups_pkey on scim_groups/;

test('the groups a user is in are found by the index of the members, each group by its id', async () => {
  const plan = await queryPlan(db, scimGroupsOfMemberQuery(db, scimIdOfPerson(1)).selectAll().compile());
  assert.match(plan, byMember, plan);
  assert.match(plan, groupById, plan);
  assert.doesNotMatch(plan, fullScan, plan);
  assert.doesNotMatch(plan, fullMembersScan, plan);
  const found = await scimGroupsPage(db, { memberId: scimIdOfPerson(1) }, 0, 20);
  const expected = Array.from({ length: GROUPS }, (_, index) => index)
    .filter((index) => [index % PEOPLE, (index * 7) % PEOPLE, (index * 13 + 1) % PEOPLE].includes(1))
    .map(groupId);
  assert.deepEqual(found.groups.map((group) => group.scimId).sort(), expected.sort());
  assert.equal(found.total, expected.length);
});
