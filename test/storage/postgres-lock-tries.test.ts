// A portal instance holds all its advisory locks on one connection, so a try for one more lock
// that fails must tell apart a statement the server refused (the connection, and every lock on
// it, is fine: only that try fails) from a connection that is gone (every lock on it is lost, and
// the work under them is told). Both are caused for real: a lock name PostgreSQL cannot take as
// text, and pg_terminate_backend on the lock connection. PostgreSQL only (advisory locks).
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { sql } from 'kysely';
import { connectDatabase, type Db } from '../../src/storage/database.js';
import { ExclusiveLocks, LockLost, type HeldLock } from '../../src/storage/exclusive.js';
import { createTestDatabase, dropTestDatabase, postgresServerUrl } from '../support/postgres.js';
import { until } from '../support/until.js';

/** The backends holding the advisory lock `name` in this database. */
async function holders(db: Db, name: string): Promise<number[]> {
  const rows = await sql<{ pid: number }>`
    SELECT pid FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND objid = (hashtext(${name})::bigint & 4294967295)::oid
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`.execute(db);
  return rows.rows.map((row) => row.pid);
}

/** A run under `name` that holds its lock until `finish()`; `held` once it runs. */
function holdLock(locks: ExclusiveLocks, name: string) {
  let finish = (): void => {};
  let held: HeldLock | null = null;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const run = locks.run(name, async (lock) => {
    held = lock;
    await finished;
    return lock.lost;
  });
  return { run, finish, held: () => held };
}

async function database(t: TestContext): Promise<{ db: Db; other: Db }> {
  const server = postgresServerUrl();
  const { name, url } = await createTestDatabase(server);
  t.after(() => dropTestDatabase(server, name));
  const db = connectDatabase({ dialect: 'postgres', url }, { limitStatements: true });
  const other = connectDatabase({ dialect: 'postgres', url });
  t.after(async () => {
    await other.destroy();
    await db.destroy();
  });
  return { db, other };
}

test('a try the server refuses fails alone: the locks held on the same connection stay held', async (t) => {
  const { db, other } = await database(t);
  const locks = new ExclusiveLocks(db);
  const a = holdLock(locks, 'reconcile');
  t.after(a.finish);
  await until('the first run holds its lock', async () => a.held() !== null);
  const [holder] = await holders(other, 'reconcile');

  // PostgreSQL's text holds no NUL: the server refuses the try's statement with an error.
  await assert.rejects(
    locks.run('reconcile-node:\u0000', async () => 'ran'),
    (error: unknown) => (error as { code?: unknown }).code === '22021',
  );
  assert.equal(a.held()?.lost, false, 'the run under way is not told its lock was lost');
  assert.doesNotThrow(() => a.held()?.check());
  assert.deepEqual(await holders(other, 'reconcile'), [holder], 'the same connection holds the lock');
  assert.deepEqual(
    await new ExclusiveLocks(other).run('reconcile', async () => 'twice'),
    { ran: false },
    'another instance still finds it taken',
  );
  const next = await locks.run('housekeeping', async () => holders(other, 'housekeeping'));
  assert.deepEqual(next, { ran: true, value: [holder] }, 'a later try is made on the same connection');

  a.finish();
  assert.equal(await a.run.then((result) => result.ran && result.value), false, 'the run ended holding its lock');
  assert.deepEqual(await holders(other, 'reconcile'), [], 'and released it');
});

test('a try on a lock connection the server ended tells the runs under way and takes a fresh connection', async (t) => {
  const { db, other } = await database(t);
  const locks = new ExclusiveLocks(db);
  const a = holdLock(locks, 'reconcile');
  t.after(a.finish);
  await until('the first run holds its lock', async () => a.held() !== null);
  const [holder] = await holders(other, 'reconcile');

  await sql`SELECT pg_terminate_backend(${holder})`.execute(other);
  const next = await locks.run('housekeeping', async () => holders(other, 'housekeeping'));
  assert.ok(next.ran, 'the new run got its lock');
  assert.equal(next.value.length, 1);
  assert.notEqual(next.value[0], holder, 'on another connection');
  assert.equal(a.held()?.lost, true, 'the run under way is told its lock was lost');
  assert.throws(() => a.held()?.check(), LockLost);
  assert.deepEqual(
    await new ExclusiveLocks(other).run('reconcile', async () => 'taken over'),
    { ran: true, value: 'taken over' },
    'another instance may take the lost lock',
  );
  a.finish();
  assert.equal(await a.run.then((result) => result.ran && result.value), true);
});
