// PostgreSQL ends a transaction left idle for `databaseTimeout`; a transaction that took a
// user's many configurations gets room for the portal's own work on them between two of its
// statements, which on a loaded machine took longer than that (a 150,000-configuration destroy
// answered 503). Here the portal's work is a pause, and `databaseTimeout` one second.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { asUserId } from '../../src/shared/ids.js';
import { deletePeersOfUser } from '../../src/storage/wg-peers.js';
import { storeConfigurations } from '../support/many-configurations.js';
import { startTestPortal } from '../support/test-portal.js';

/** Longer than the one-second `databaseTimeout`, shorter than the room 10,000 rows give. */
const PORTAL_WORK_MS = 1_800;

test('PostgreSQL: a transaction that deleted a user’s 10,000 configurations may spend longer than databaseTimeout on them before its next statement; one that read a row may not', async (t) => {
  const portal = await startTestPortal({ config: { databaseTimeout: 'PT1S', databaseRetryFor: 'PT0S' } });
  t.after(() => portal.close());
  const { db } = portal.portal.ctx;
  await storeConfigurations(portal, 'kiosk', 10_000);

  const deleted = await db.transaction().execute(async (trx) => {
    const peers = await deletePeersOfUser(trx, asUserId('kiosk'));
    await sleep(PORTAL_WORK_MS);
    await sql`DELETE FROM users WHERE user_id = 'kiosk'`.execute(trx);
    return peers.length;
  });
  assert.equal(deleted, 10_000);
  assert.deepEqual(await db.selectFrom('users').select('user_id').execute(), []);

  // The bound itself is still there for a transaction of a few rows: the server ended it.
  await storeConfigurations(portal, 'alice', 1);
  await assert.rejects(
    db.transaction().execute(async (trx) => {
      await trx.selectFrom('wg_peers').selectAll().where('user_id', '=', 'alice').execute();
      await sleep(PORTAL_WORK_MS);
      await sql`DELETE FROM wg_peers WHERE user_id = 'alice'`.execute(trx);
    }),
  );
  const kept = await db.selectFrom('wg_peers').select('public_key').where('user_id', '=', 'alice').execute();
  assert.equal(kept.length, 1, 'the ended transaction deleted nothing');
});
