// A real deadlock between two SCIM writes on PostgreSQL: a group PATCH that takes a member out and
// the DELETE of that user lock the membership row and the user's SCIM row in opposite order. The
// server ends the deadlock by rolling one of them back (40P01); that one runs again, and both
// requests succeed. The PATCH is held, by a plugin on its database handle, right after it deleted
// the membership row, until the DELETE waits for it. PostgreSQL only: SQLite runs one writing
// transaction at a time, so there two writes never wait for each other.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { sql } from 'kysely';
import type { AdminCall } from '../../../src/core/admin-call.js';
import type { PortalContext } from '../../../src/core/context.js';
import { patchDirectoryGroup } from '../../../src/core/directory/index.js';
import { patchGroup } from '../../../src/protocol/scim.js';
import { makeAdminKey } from '../../support/admin-keys.js';
import { capturedLog } from '../../support/captured-log.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { patchOp, scimClient, storedMembers } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

test('a group PATCH and a user DELETE that deadlock on PostgreSQL both succeed: the one the server rolls back runs again', async (t) => {
  const log = capturedLog('warn');
  const portal = await startTestPortal({
    config: { scim: { groupProfiles: { Staff: ['employees'] } } },
    logger: log.logger,
  });
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const alice = String((await scim.send('POST', 'Users', { userName: 'alice' })).body?.['id']);
  const bob = String((await scim.send('POST', 'Users', { userName: 'bob' })).body?.['id']);
  const group = await scim.send('POST', 'Groups', {
    displayName: 'Staff',
    members: [{ value: alice }, { value: bob }],
  });
  const groupId = String(group.body?.['id']);

  // The PATCH (as its route makes it), held once it deleted alice's membership row.
  const hold = new HoldStatement(
    (node, text) => node.kind === 'DeleteQueryNode' && text.includes('"scim_group_members"'),
  );
  const base = portal.portal.ctx;
  const call: AdminCall = {
    caller: { kind: 'command-line', sourceAddress: 'local' },
    name: 'scim PATCH /Groups',
    parameters: { id: groupId },
    successStatus: 200,
  };
  const ctx: PortalContext = { ...base, db: base.db.withPlugin(hold), call, events: base.events.forCall(call) };
  const body = patchOp({ op: 'Remove', path: `members[value eq "${alice}"]` });
  const patching = patchDirectoryGroup(ctx, groupId, (stored) =>
    patchGroup(stored, body, `${scim.base}Groups/${groupId}`),
  );
  await hold.reached;

  // The DELETE locks alice's SCIM row, then waits for the membership row the PATCH holds…
  const deleting = scim.send('DELETE', `Users/${alice}`);
  const waitingForALock = async (): Promise<number> => {
    const row = await sql<{ waiting: string }>`select count(*) as waiting from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`.execute(base.db);
    return Number(row.rows[0]?.waiting ?? 0);
  };
  for (let tries = 0; (await waitingForALock()) === 0; tries += 1) {
    assert.ok(tries < 200, 'the DELETE never waited for the PATCH');
    await sleep(10);
  }
  // …and the PATCH, let go, notes alice's profile check on that row: each waits for the other.
  hold.release();
  const [patched, deleted] = await Promise.all([patching, deleting]);

  assert.equal(deleted.status, 204, JSON.stringify(deleted.body));
  assert.deepEqual(
    patched.group.members?.map((member) => member.display),
    ['bob'],
  );
  assert.deepEqual(await storedMembers(portal, groupId), [bob]);
  assert.equal((await scim.send('GET', `Users/${alice}`)).status, 404);
  const users = await base.db.selectFrom('users').select('user_id').orderBy('user_id').execute();
  assert.deepEqual(
    users.map((user) => user.user_id),
    ['bob'],
  );
  const reruns = log
    .lines()
    .filter(
      (line) =>
        line.msg === 'the database rolled a change back to end a conflict with another transaction; it runs again',
    )
    .map((line) => (line['err'] as { code?: unknown } | undefined)?.code);
  assert.deepEqual(reruns, ['40P01'], 'the server saw a deadlock and ended it');
});
