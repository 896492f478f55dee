// On PostgreSQL a disable_user reads nothing before its transaction: the update that locks the
// user's row is also the check that the user exists, so the revoking change is BEGIN, that
// update, the user's access ended, the closing writes and COMMIT. Counted at pg's own client.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalContext } from '../../../src/core/context.js';
import { PortalError } from '../../../src/core/errors.js';
import { disableUser, enableUser } from '../../../src/core/users/index.js';
import { asUserId } from '../../../src/shared/ids.js';
import { statementsSentBy } from '../../support/pg-statements.js';
import { startTestPortal } from '../../support/test-portal.js';

/** The statements up to and including the first COMMIT: the call's own change. */
function untilCommit(statements: readonly string[]): string[] {
  const commit = statements.findIndex((statement) => /^commit/i.test(statement));
  return statements.slice(0, commit + 1);
}

test('a disable_user on PostgreSQL revokes in five statements and reads nothing before them', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  assert.equal((await portal.post('/create', { user_id: 'ann', profile_id: 'employees' })).status, 200);
  const ctx: PortalContext = portal.portal.ctx;

  const { statements } = await statementsSentBy(() => disableUser(ctx, asUserId('ann')));
  const change = untilCommit(statements);
  assert.equal(change.length, 5, change.join('\n'));
  assert.match(change[0] ?? '', /^begin/i);
  assert.match(change[1] ?? '', /^update "users"/i);

  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: ['ann'] });
});

test('a disable_user or enable_user of a user that does not exist answers 400 and leaves no trace', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const ctx: PortalContext = portal.portal.ctx;
  const receipts = async () => (await ctx.db.selectFrom('revocations').select('revocation_id').execute()).length;

  for (const call of [disableUser, enableUser]) {
    const { statements } = await statementsSentBy(() =>
      assert.rejects(
        call(ctx, asUserId('nobody')),
        (error) => error instanceof PortalError && error.code === 'no-such-user',
      ),
    );
    assert.match(statements.at(-1) ?? '', /^rollback/i, statements.join('\n'));
  }
  assert.equal(await receipts(), 0, 'no receipt');
  assert.equal((await ctx.db.selectFrom('users').select('user_id').execute()).length, 0);
});
