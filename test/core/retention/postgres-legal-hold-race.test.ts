// Two releases of one legal hold at once: on PostgreSQL the second waits for the first's row
// and then finds the hold released. Its 409 must say so, not that a hold in force for a year
// "expired at …". PostgreSQL only: SQLite runs one writer at a time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startTestPortal } from '../../support/test-portal.js';

test('a release that waited for another release of the same hold answers that the hold was released', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  await portal.post('/create', { user_id: 'alice', profile_id: 'employees' });
  // A year from the portal's own (real) clock: a fixed date would be refused once it has passed,
  // and one more than 10 years ahead is refused now.
  const until = new Date(Date.now() + 365 * 86_400_000).toISOString();
  const made = await portal.post('/create_legal_hold', { user_id: 'alice', reason: 'case 7', until });
  assert.equal(made.status, 200, made.text);
  const holdId = (made.json() as { legal_hold: { hold_id: string } }).legal_hold.hold_id;
  const other = new pg.Client({ connectionString: portal.database });
  const watcher = new pg.Client({ connectionString: portal.database });
  for (const client of [other, watcher]) {
    await client.connect();
    // Ended by the test, or by the database's removal when the portal closes.
    client.on('error', () => {});
    t.after(() => client.end().catch(() => {}));
  }

  // Another release (as another portal instance makes it) holds the row until it commits.
  await other.query('BEGIN');
  await other.query(`UPDATE legal_holds SET released_at = '2026-12-01T00:00:00+00:00' WHERE hold_id = $1`, [holdId]);
  const release = portal.post('/release_legal_hold', { hold_id: holdId });
  for (;;) {
    const { rows } = await watcher.query<{ waiting: string }>(
      `SELECT count(*) AS waiting FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
    );
    if (Number(rows[0]?.waiting) > 0) break;
    await sleep(20);
  }
  await other.query('COMMIT');

  const answer = await release;
  assert.equal(answer.status, 409, answer.text);
  assert.deepEqual(answer.json(), {
    error: `legal hold ${holdId} was released at 2026-12-01T00:00:00+00:00`,
  });
});
