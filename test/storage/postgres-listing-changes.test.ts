// The listing journal on PostgreSQL (src/storage/listing-changes.ts): a reader asks again for
// the rows of every transaction that was running at its last read, and must never take a row
// it was already past for news. A transaction left open elsewhere on the server (another
// database's long report, a stalled session) holds the horizon back for everyone, which is
// what this test does on purpose.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readListingChanges } from '../../src/storage/listing-changes.js';
import { createTestDatabase, dropTestDatabase, onServer, postgresServerUrl } from '../support/postgres.js';
import { startTestPortal } from '../support/test-portal.js';

test('while another session holds a transaction open, a first read of the journal notes what it was past, and the next read reports only what came after', async (t) => {
  const server = postgresServerUrl();
  const { name, url } = await createTestDatabase(server);
  const portal = await startTestPortal({ database: url });
  t.after(async () => {
    await portal.close();
    await dropTestDatabase(server, name);
  });
  const { db } = portal.portal.ctx;

  await onServer(url, async (other) => {
    await other.query('BEGIN');
    await other.query('SELECT pg_current_xact_id()');
    try {
      assert.equal((await portal.post('/create', { user_id: 'ann', profile_id: 'employees' })).status, 200);
      const first = await readListingChanges(db, null);
      assert.deepEqual(first.changes, [], 'a first read reports nothing: its reader builds from scratch');

      const second = await readListingChanges(db, first.cursor);
      assert.deepEqual(second.changes, [], "ann's create was committed before the first read: no news");

      assert.equal((await portal.post('/create', { user_id: 'bob', profile_id: 'employees' })).status, 200);
      const third = await readListingChanges(db, second.cursor);
      assert.equal(third.changes.length, 1, "bob's create, once");
      const fourth = await readListingChanges(db, third.cursor);
      assert.deepEqual(fourth.changes, [], 'and not again');
    } finally {
      await other.query('ROLLBACK');
    }
  });
});
