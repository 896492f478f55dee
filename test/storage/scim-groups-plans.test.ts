// A directory finding its group by displayName, in any case (`GET /Groups?filter=displayName eq
// "…"`, which Entra ID and Okta send for each group they push), reads the index of the groups'
// name keys on both databases, not every group: asked of the database's own planner with the
// query the portal runs, over a directory of groups. PostgreSQL keeps statistics of its tables by
// itself, and is given them here; SQLite plans without, as in use.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { isPostgres, type Db } from '../../src/storage/database.js';
import { insertScimGroup, scimGroupsNamedQuery, scimGroupsPage } from '../../src/storage/scim-groups.js';
import { queryPlan } from '../support/query-plans.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

const GROUPS = 2000;
const AT = '2026-03-01T12:00:00+00:00';

let portal: TestPortal;
let db: Db;

before(async () => {
  portal = await startTestPortal();
  db = portal.portal.ctx.db;
  for (let index = 0; index < GROUPS; index += 1)
    await insertScimGroup(db, {
      scimId: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`,
      displayName: index === 7 ? 'Équipe Réseau' : `VPN-Staff-${index}`,
      externalId: null,
      createdAt: AT,
      updatedAt: AT,
    });
  if (isPostgres(db)) await sql`ANALYZE scim_groups`.execute(db);
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
