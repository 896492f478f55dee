// A group change is saved before its members' profiles are checked: when that check fails for
// real (the database refuses a deletion), the directory is answered with success, not a 500 that
// would make it send again a change already made, and the pending checks finish the work.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { isPostgres, type Db } from '../../../src/storage/database.js';
import { makeAdminKey, ManualClock } from '../../support/admin-keys.js';
import { capturedLog } from '../../support/captured-log.js';
import { patchOp, scimClient, storedMembers } from '../../support/scim-client.js';
import { startTestPortal, UNREACHABLE_NODE, type TestPortal } from '../../support/test-portal.js';

/** Makes the database refuse to delete the WireGuard configurations of these users (a trigger). */
async function refuseDeletionsOf(db: Db, userIds: readonly string[]): Promise<void> {
  const users = sql.join(userIds.map((userId) => sql.lit(userId)));
  if (isPostgres(db)) {
    await sql`create function refuse_deletion() returns trigger language plpgsql as $$
      begin raise exception 'the database refused the deletion'; end $$`.execute(db);
    await sql`create trigger refuse_deletion before delete on wg_peers for each row
      when (old.user_id in (${users})) execute function refuse_deletion()`.execute(db);
  } else {
    await sql`create trigger refuse_deletion before delete on wg_peers
      when old.user_id in (${users}) begin select raise(abort, 'the database refused the deletion'); end`.execute(db);
  }
}

async function allowDeletions(db: Db): Promise<void> {
  await sql`drop trigger refuse_deletion${isPostgres(db) ? sql` on wg_peers` : sql``}`.execute(db);
}

async function profilesOf(portal: TestPortal, userId: string): Promise<string[]> {
  return (await portal.admin.userConfigurationList(userId)).map((configuration) => configuration.profile_id).sort();
}

async function noted(portal: TestPortal): Promise<string[]> {
  const rows = await portal.portal.ctx.db
    .selectFrom('scim_users')
    .select('user_id')
    .where('profile_check', 'is not', null)
    .orderBy('user_id')
    .execute();
  return rows.map((row) => row.user_id);
}

test('a group PATCH and DELETE whose profile checks the database refuses are answered with success, stored, and checked later by the pending checks', async (t) => {
  const clock = new ManualClock();
  const log = capturedLog();
  const profile = (profileId: string, range: number) => ({
    profileId,
    displayName: profileId,
    hostName: 'vpn.example.org',
    wRangeFour: `10.${range}.0.0/24`,
    wRangeSix: `fd${range}::/64`,
    nodeUrl: UNREACHABLE_NODE,
  });
  const portal = await startTestPortal({
    config: {
      ProfileList: [profile('employees', 44), profile('guests', 45)],
      scim: { groupProfiles: { Guests: ['guests'], Visitors: ['guests'] } },
    },
    clock,
    logger: log.logger,
  });
  t.after(() => portal.close());
  const db = portal.portal.ctx.db;
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const ids: Record<string, string> = {};
  for (const userName of ['alice', 'bob', 'carol']) {
    ids[userName] = String((await scim.send('POST', 'Users', { userName })).body?.['id']);
    await portal.admin.create({ user_id: userName, profile_id: 'guests' });
  }
  const guests = await scim.send('POST', 'Groups', {
    displayName: 'Guests',
    members: [{ value: ids['alice'] }, { value: ids['bob'] }],
  });
  const visitors = await scim.send('POST', 'Groups', { displayName: 'Visitors', members: [{ value: ids['carol'] }] });
  const guestsId = String(guests.body?.['id']);
  const visitorsId = String(visitors.body?.['id']);
  await refuseDeletionsOf(db, ['bob', 'carol']);

  // Alice is checked first (user id order) and loses guests; bob's deletion is refused.
  const patched = await scim.send(
    'PATCH',
    `Groups/${guestsId}`,
    patchOp({ op: 'replace', path: 'members', value: [] }),
  );
  assert.equal(patched.status, 200, JSON.stringify(patched.body));
  assert.equal(patched.receipts.length, 1, "alice's receipt");
  assert.deepEqual(await storedMembers(portal, guestsId), []);
  assert.deepEqual(await profilesOf(portal, 'alice'), []);
  assert.deepEqual(await profilesOf(portal, 'bob'), ['guests']);

  const deleted = await scim.send('DELETE', `Groups/${visitorsId}`);
  assert.equal(deleted.status, 204, JSON.stringify(deleted.body));
  assert.equal((await scim.send('GET', `Groups/${visitorsId}`)).status, 404);
  assert.deepEqual(await profilesOf(portal, 'carol'), ['guests']);
  assert.deepEqual(await noted(portal), ['bob', 'carol']);
  const failures = log
    .lines()
    .filter((line) => line.msg?.startsWith('a directory group change is saved, but the profiles'))
    .map((line) => [line.level, line['userId']]);
  assert.deepEqual(failures, [
    [50, 'bob'],
    [50, 'carol'],
  ]);

  // The database takes deletions again: the next pass checks them (no request's check runs for
  // them any more, so it need not wait the grace that keeps it off one).
  await allowDeletions(db);
  await portal.reconcile();
  assert.deepEqual(await profilesOf(portal, 'bob'), []);
  assert.deepEqual(await profilesOf(portal, 'carol'), []);
  assert.deepEqual(await noted(portal), []);
});
