// A destroy deletes a user's configurations a few thousand per statement. On PostgreSQL a
// statement skips a row another transaction deleted while it waited for it (the expiry sweep,
// a delete_connection on another portal instance): that statement comes back short, and the
// destroy must go on rather than take it for the last, or the configurations after it would go
// with the user's row without leaving their nodes or giving their addresses back. PostgreSQL only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startRoomyPortal, storeConfigurations } from '../../support/many-configurations.js';

const CONFIGURATIONS = 12_000;

test('a destroy whose first statement meets a configuration deleted beside it still deletes and gives back every other one', async (t) => {
  const portal = await startRoomyPortal(t);
  await storeConfigurations(portal, 'kiosk', CONFIGURATIONS);
  const beside = new pg.Client({ connectionString: portal.database });
  const watcher = new pg.Client({ connectionString: portal.database });
  for (const client of [beside, watcher]) {
    await client.connect();
    // Ended by the test, or by the database's removal when the portal closes.
    client.on('error', () => {});
    t.after(() => client.end().catch(() => {}));
  }

  // Another transaction deletes one configuration among the first the destroy takes, and holds it.
  await beside.query('BEGIN');
  await beside.query(
    `DELETE FROM wg_peers WHERE public_key = (SELECT public_key FROM wg_peers WHERE user_id = 'kiosk' ORDER BY public_key LIMIT 1 OFFSET 10)`,
  );
  const destroyed = portal.admin.destroy('kiosk');
  // The destroy's statement waits for that row; then the other transaction commits.
  for (;;) {
    const { rows } = await watcher.query<{ waiting: string }>(
      `SELECT count(*) AS waiting FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
    );
    if (Number(rows[0]?.waiting) > 0) break;
    await sleep(20);
  }
  await beside.query('COMMIT');
  await destroyed;

  const left = await watcher.query<{ count: string }>(`SELECT count(*) FROM wg_peers`);
  assert.equal(Number(left.rows[0]?.count), 0);
  const free = await watcher.query<{ count: string }>(`SELECT count(*) FROM ip_pool_free`);
  assert.equal(Number(free.rows[0]?.count), CONFIGURATIONS - 1, 'every address the destroy deleted is given back');
  // Its receipt names every one of them, for the nodes to confirm.
  const receipts = (await portal.get('/revocations', { user_id: 'kiosk' })).json() as {
    revocations: { reason: string; connection_ids: string[] }[];
  };
  assert.deepEqual(
    receipts.revocations.map((receipt) => [receipt.reason, receipt.connection_ids.length]),
    [['destroy', CONFIGURATIONS - 1]],
  );
  await beside.end();
  await watcher.end();
});
