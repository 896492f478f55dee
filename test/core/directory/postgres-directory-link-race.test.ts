// Three POSTs at once that link a portal user made otherwise and call it inactive (a directory's
// retries, two portal instances): one links and disables the user, the others answer 409, and
// none of them deadlocks. Each used to share-lock the user's row, wait for the first one's SCIM
// user to commit, while the first one's disable waited for their share locks: PostgreSQL ended
// it by rolling one back (40P01), and more POSTs at once could fail after the retries. The
// first POST is held right after it made its SCIM user, until the others wait for it, so the
// race happens every time. PostgreSQL only: SQLite runs one writing transaction at a time.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { sql } from 'kysely';
import { createDirectoryUser } from '../../../src/core/directory/index.js';
import { readUser, ScimProblem } from '../../../src/protocol/scim.js';
import type { Db } from '../../../src/storage/database.js';
import { makeAdminKey } from '../../support/admin-keys.js';
import { capturedLog, type CapturedLog } from '../../support/captured-log.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

const RERUN = 'the database rolled a change back to end a conflict with another transaction; it runs again';

async function waitingForALock(db: Db): Promise<number> {
  const row = await sql<{ waiting: string }>`select count(*) as waiting from pg_stat_activity
    where datname = current_database() and wait_event_type = 'Lock'`.execute(db);
  return Number(row.rows[0]?.waiting ?? 0);
}

function reruns(log: CapturedLog): unknown[] {
  return log
    .lines()
    .filter((line) => line.msg === RERUN)
    .map((line) => (line['err'] as { code?: unknown } | undefined)?.code);
}

test('three POSTs at once that link an existing user as inactive: one disables it, two answer 409, and no deadlock is rolled back', async (t) => {
  const log = capturedLog('warn');
  const portal = await startTestPortal({ logger: log.logger });
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });

  const hold = new HoldStatement((node, text) => node.kind === 'InsertQueryNode' && text.includes('"scim_users"'));
  const ctx = portal.portal.ctx;
  const first = createDirectoryUser(
    { ...ctx, db: ctx.db.withPlugin(hold) },
    readUser({ userName: 'alice', active: false }),
  ).then(
    (change) => ({ status: 201, receipts: change.revocationIds.length }),
    (error: unknown) => ({ status: error instanceof ScimProblem ? error.status : 500, receipts: 0, error }),
  );
  await hold.reached;
  const others = [1, 2].map(() => scim.send('POST', 'Users', { userName: 'alice', active: false }));
  for (let tries = 0; (await waitingForALock(ctx.db)) < 2; tries += 1) {
    assert.ok(tries < 300, 'the other POSTs never waited for the first');
    await sleep(10);
  }
  hold.release();

  const answers = [await first, ...(await Promise.all(others))];
  assert.deepEqual(
    answers.map((answer) => answer.status),
    [201, 409, 409],
    JSON.stringify(answers.map((answer) => ('body' in answer ? answer.body : answer))),
  );
  assert.equal(answers[0]?.receipts, 1, 'the first one disabled alice');
  assert.deepEqual(await portal.admin.disabledUsers(), ['alice']);
  assert.deepEqual(reruns(log), [], 'no change was rolled back to end a deadlock');
});

test('three POSTs at once as inactive, twenty times over, of an existing user or a new one: one answers 201, the others 409, and none is rolled back', async (t) => {
  const log = capturedLog('warn');
  const portal = await startTestPortal({ logger: log.logger });
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  for (let round = 0; round < 20; round += 1) {
    const userName = `user-${round}`;
    if (round % 2 === 0) await portal.admin.create({ user_id: userName, profile_id: 'employees' });
    const answers = await Promise.all([0, 1, 2].map(() => scim.send('POST', 'Users', { userName, active: false })));
    assert.deepEqual(
      answers.map((answer) => answer.status).sort(),
      [201, 409, 409],
      `round ${round}: ${JSON.stringify(answers.map((answer) => answer.body))}`,
    );
  }
  assert.equal((await portal.admin.disabledUsers()).length, 20);
  assert.deepEqual(reruns(log), [], 'no change was rolled back to end a deadlock');
});
