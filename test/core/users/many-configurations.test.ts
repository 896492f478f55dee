// Nothing bounds how many configurations one user holds (a kiosk account, a shared MDM user):
// disabling or destroying a user with more of them than a JavaScript call takes arguments must
// still revoke every one. Runs on SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { latestRevision } from '../../../src/storage/revisions.js';
import { startRoomyPortal, storeConfigurations } from '../../support/many-configurations.js';
import type { TestPortal } from '../../support/test-portal.js';

/** More than a call's arguments may be (about 125,000 here). */
const CONFIGURATIONS = 150_000;

async function peersOf(portal: TestPortal, userId: string): Promise<number> {
  const row = await portal.portal.ctx.db
    .selectFrom('wg_peers')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

test('a user holding 150,000 configurations is disabled: the user is refused and every configuration leaves the listing', async (t) => {
  const portal = await startRoomyPortal(t);
  await storeConfigurations(portal, 'kiosk', CONFIGURATIONS);
  const before = await latestRevision(portal.portal.ctx.db);

  // As the destroy below: on a busy machine past the typed client's default wait (30 s).
  const disabledNow = await portal.post('/disable_user', { user_id: 'kiosk' });
  assert.equal(disabledNow.status, 204, disabledNow.text);

  // Without the typed client's 30 s wait either: right after such a disable the portal is still
  // busy with its consequences, and a loaded machine took longer (an aborted fetch, seen as {}).
  const disabled = await portal.get('/disabled_users');
  assert.equal(disabled.status, 200);
  assert.deepEqual((disabled.json() as { disabled_users: string[] }).disabled_users, ['kiosk']);
  // Every one got its removal's revision, newer than the one it was stored with.
  const unstamped = await portal.portal.ctx.db
    .selectFrom('wg_peers')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('user_id', '=', 'kiosk')
    .where('revision', '<=', before)
    .executeTakeFirstOrThrow();
  assert.equal(Number(unstamped.count), 0);
  assert.equal(await peersOf(portal, 'kiosk'), CONFIGURATIONS, 'disabled, not deleted');
  const listed = await portal.get('/connection_list', { profile_id: 'employees' });
  assert.equal(listed.status, 200);
  assert.deepEqual(listed.json(), { connection_list: { employees: [] } });
});

test('a user holding 150,000 configurations is destroyed: every configuration is deleted and its address given back', async (t) => {
  const portal = await startRoomyPortal(t);
  await storeConfigurations(portal, 'kiosk', CONFIGURATIONS);

  // Seconds on a busy machine, past the typed client's default wait (30 s): the call, as sent.
  const destroyed = await portal.post('/destroy', { user_id: 'kiosk' });
  assert.equal(destroyed.status, 204, destroyed.text);

  assert.equal(await peersOf(portal, 'kiosk'), 0);
  const free = await portal.portal.ctx.db
    .selectFrom('ip_pool_free')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow();
  assert.equal(Number(free.count), CONFIGURATIONS);
});
