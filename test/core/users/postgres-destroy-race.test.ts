// Two destroys of one user at once, as a client's retry or two administrators send them: both
// find the user before their transactions, and on PostgreSQL the second waits for the first's
// lock on the user's row. Once it holds the lock the user is gone, and it must answer the
// reference's 400 rather than announce a second destroy (a second receipt, webhook and audit
// row of a destroy that did nothing). PostgreSQL only: SQLite runs one writer at a time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startTestPortal } from '../../support/test-portal.js';

test('of two destroys of one user raced, one destroys it and the other answers that the user does not exist', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const created = await portal.post('/create', { user_id: 'alice', profile_id: 'employees' });
  assert.equal(created.status, 200, created.text);
  const holder = new pg.Client({ connectionString: portal.database });
  const watcher = new pg.Client({ connectionString: portal.database });
  for (const client of [holder, watcher]) {
    await client.connect();
    // Ended by the test, or by the database's removal when the portal closes.
    client.on('error', () => {});
    t.after(() => client.end().catch(() => {}));
  }

  // Another transaction holds the user's row: both destroys find the user, then wait for it.
  await holder.query('BEGIN');
  await holder.query(`SELECT user_id FROM users WHERE user_id = 'alice' FOR UPDATE`);
  const destroys = [portal.post('/destroy', { user_id: 'alice' }), portal.post('/destroy', { user_id: 'alice' })];
  for (;;) {
    const { rows } = await watcher.query<{ waiting: string }>(
      `SELECT count(*) AS waiting FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
    );
    if (Number(rows[0]?.waiting) >= 2) break;
    await sleep(20);
  }
  await holder.query('COMMIT');
  const answers = await Promise.all(destroys);

  assert.deepEqual(answers.map((answer) => answer.status).sort(), [204, 400], answers.map((a) => a.text).join(' | '));
  assert.equal(answers.find((answer) => answer.status === 400)?.text, '{"error":"user does not exist"}');
  const receipts = (await portal.get('/revocations', { user_id: 'alice' })).json() as {
    revocations: { reason: string }[];
  };
  assert.deepEqual(
    receipts.revocations.map((receipt) => receipt.reason),
    ['destroy'],
    'one receipt: one destroy',
  );
});
