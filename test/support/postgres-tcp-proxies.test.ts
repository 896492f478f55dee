// The PostgreSQL cutter keeps a withheld COMMIT's connection silent for the portal even when the
// server ends the session behind it: the end-to-end tests of a COMMIT without an answer rely on the
// portal hearing nothing at all until its own databaseTimeout, never a connection that broke.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { privateDatabaseFor } from './private-postgres.js';
import { startPostgresCutter } from './tcp-proxies.js';
import { until } from './until.js';

const IDLE_LIMIT_MS = 1000;

test('a COMMIT the cutter withholds gets neither an answer nor an end, also after the server ended the idle transaction', async (t) => {
  const { url, atEnd } = await privateDatabaseFor(t);
  const cutter = await startPostgresCutter(url);
  atEnd(() => cutter.close());
  const client = new pg.Client({
    connectionString: cutter.url,
    application_name: 'withheld-commit',
    // The server ends the transaction this long after its last answer, as the portal's sessions are set up.
    idle_in_transaction_session_timeout: IDLE_LIMIT_MS,
  });
  client.on('error', () => {});
  await client.connect();
  atEnd(() => client.end().catch(() => {}));
  const watcher = new pg.Client({ connectionString: url });
  await watcher.connect();
  atEnd(() => watcher.end());

  const cut = cutter.cutNextCommit('withheld here', 'withheld');
  // In lower case, as Kysely sends them (the cutter knows the COMMIT by its text).
  await client.query('begin');
  await client.query(`SELECT 'withheld here'`);
  const commit = client.query('commit').then(
    () => 'answered',
    (error: Error) => `failed: ${error.message}`,
  );
  await cut;

  await until(
    'the server ends the idle transaction',
    async () =>
      (await watcher.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'withheld-commit'`)).rowCount === 0,
  );
  // Time for an end the cutter passed on to reach the client.
  await sleep(500);
  assert.equal(
    await Promise.race([commit, Promise.resolve('still waiting')]),
    'still waiting',
    'the client heard nothing of the session the server ended',
  );
});
