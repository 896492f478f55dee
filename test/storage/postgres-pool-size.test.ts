// `databasePoolSize`: how many PostgreSQL connections one portal instance keeps. A burst of
// creates larger than the pool waits for a connection instead of opening more, so an
// administrator can size several instances against the server's max_connections.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onServer } from '../support/postgres.js';
import { startTestPortal } from '../support/test-portal.js';
import { until } from '../support/until.js';

test('a portal with databasePoolSize 2 answers 40 concurrent creates over at most two connections', async (t) => {
  const portal = await startTestPortal({ config: { databasePoolSize: 2 } });
  t.after(() => portal.close());
  const databaseName = new URL(portal.database).pathname.slice(1);
  let most = 0;
  let sampling = true;
  // One connection for all samples: a connection per sample was itself counted once, by a
  // sample taken while the backend of the one before was still ending (3 in a CI run).
  const sampler = onServer(portal.database, async (client) => {
    while (sampling) {
      const { rows } = await client.query<{ count: string }>(
        'SELECT count(*) AS count FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [databaseName],
      );
      most = Math.max(most, Number(rows[0]?.count));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  });
  // The connection that applied the migrations is closed at start; its server process may
  // still be listed for a moment, and it is not one of the pool's.
  await until('the migration connection gone', async () => {
    most = 0;
    await new Promise((resolve) => setTimeout(resolve, 50));
    return most <= 2;
  });
  most = 0;
  const answers = await Promise.all(
    Array.from({ length: 40 }, (_, index) =>
      portal.post('/create', { user_id: `u${index % 7}`, profile_id: 'employees' }),
    ),
  );
  sampling = false;
  await sampler;
  assert.deepEqual(
    answers.map((answer) => answer.status),
    Array.from({ length: 40 }, () => 200),
  );
  assert.ok(most >= 1, 'the sampler saw the portal connected');
  assert.ok(most <= 2, `${most} connections from the portal at once`);
});
