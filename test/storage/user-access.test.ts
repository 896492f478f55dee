// What disable_user takes from a user once its row is locked: its authorizations, its configurations'
// place on the nodes (a new revision each) and its certificates, read back; on PostgreSQL in one
// statement, after the statement that locked the user.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asUserId } from '../../src/shared/ids.js';
import { isPostgres } from '../../src/storage/database.js';
import { endAccessOfUser } from '../../src/storage/user-access.js';
import { setUserDisabled } from '../../src/storage/users.js';
import { statementsSentBy } from '../support/pg-statements.js';
import { startTestPortal } from '../support/test-portal.js';

const AT = '2026-11-30T07:00:00+00:00';

test('ending a user’s access takes its authorizations and stamps its configurations, and no one else’s; on PostgreSQL in one statement', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  for (const user of ['ann', 'ann', 'bob']) {
    assert.equal((await portal.post('/create', { user_id: user, profile_id: 'employees' })).status, 200);
  }
  for (const user of ['ann', 'bob']) {
    await db
      .insertInto('oauth_authorizations')
      .values({
        auth_key: `key-${user}`,
        user_id: user,
        client_id: 'app',
        scope: 'config',
        authorized_at: AT,
        // Far ahead: the daily housekeeping deletes expired authorizations, bob's too.
        expires_at: '2099-01-01T00:00:00+00:00',
      })
      .execute();
  }
  const revisions = async () =>
    new Map(
      (await db.selectFrom('wg_peers').select(['public_key', 'revision']).execute()).map((row) => [
        row.public_key,
        BigInt(row.revision),
      ]),
    );
  const before = await revisions();

  const { statements, result } = await statementsSentBy(() =>
    db.transaction().execute(async (trx) => {
      await setUserDisabled(trx, asUserId('ann'), true);
      return endAccessOfUser(trx, asUserId('ann'), AT);
    }),
  );
  if (isPostgres(db)) assert.equal(statements.length, 4, statements.join('\n')); // begin, the lock, this, commit

  const after = await revisions();
  assert.equal(result.peers.length, 2);
  for (const peer of result.peers) {
    assert.equal(peer.userId, 'ann');
    assert.ok((after.get(peer.publicKey) ?? 0n) > (before.get(peer.publicKey) ?? 0n), 'a new revision');
    assert.equal(BigInt(peer.revision), after.get(peer.publicKey));
  }
  const bobs = [...before].filter(([key]) => !result.peers.some((peer) => peer.publicKey === key));
  for (const [key, revision] of bobs) assert.equal(after.get(key), revision, 'bob’s configuration is left alone');
  assert.deepEqual(result.certificates, []);
  const authorizations = await db.selectFrom('oauth_authorizations').select('user_id').execute();
  assert.deepEqual(
    authorizations.map((row) => row.user_id),
    ['bob'],
  );
});
