// An instance's locks share one reserved connection, and its runs start and end independently:
// two of them may try or release a lock at the same moment. The driver queues a statement sent
// while another runs, but warns that it will refuse it in its next major version; the reserved
// connection sends its statements one after the other itself. PostgreSQL only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectDatabase } from '../../src/storage/database.js';
import { ExclusiveLocks } from '../../src/storage/exclusive.js';
import { createTestDatabase, dropTestDatabase, postgresServerUrl } from '../support/postgres.js';

test('many runs taking and releasing their locks at once send one statement at a time, and all of them run', async (t) => {
  const server = postgresServerUrl();
  const { name, url } = await createTestDatabase(server);
  t.after(() => dropTestDatabase(server, name));
  const db = connectDatabase({ dialect: 'postgres', url });
  t.after(() => db.destroy());
  const warnings: string[] = [];
  const onWarning = (warning: Error): void => {
    warnings.push(warning.message);
  };
  process.on('warning', onWarning);
  t.after(() => process.off('warning', onWarning));

  const locks = new ExclusiveLocks(db);
  let started = 0;
  let allStarted = (): void => {};
  const everyRunStarted = new Promise<void>((resolve) => (allStarted = resolve));
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, index) =>
      locks.run(`work-${index}`, async () => {
        // Every run holds its lock until all of them hold theirs: their releases meet too.
        if (++started === 20) allStarted();
        await everyRunStarted;
        return index;
      }),
    ),
  );
  // Warnings are emitted on the next tick.
  await new Promise((resolve) => setImmediate(resolve));

  assert.deepEqual(
    results,
    Array.from({ length: 20 }, (_, index) => ({ ran: true, value: index })),
  );
  assert.deepEqual(
    warnings.filter((message) => message.includes('already executing a query')),
    [],
  );
});
