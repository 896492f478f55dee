// PostgreSQL statements the portal runs again and again are prepared once on each connection
// (src/storage/statement-names.ts), unless `databasePreparedStatements` is false; and a prepared
// statement made stale by another instance's migration costs no call; when the names start over,
// the connections that prepared the old ones are closed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { parseDatabaseLocation } from '../../src/config/database-location.js';
import type { UserId } from '../../src/shared/ids.js';
import { connectDatabase } from '../../src/storage/database.js';
import { GENERATION_AT_LEAST_MS, MOST_NAMES } from '../../src/storage/statement-names.js';
import { findUser } from '../../src/storage/users.js';
import { capturedLog } from '../support/captured-log.js';
import { migrationTestLocation, onServer } from '../support/postgres.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

/** The portal's pool in the tests below: the default size. */
const POOL_SIZE = 10;

/** Three reads of one statement on one connection, then what that connection has prepared. */
async function preparedAfterThreeReads(database: string, preparedStatements: boolean): Promise<string[]> {
  const db = connectDatabase(parseDatabaseLocation(database, '/'), { preparedStatements });
  try {
    return await db.connection().execute(async (connection) => {
      for (const userId of ['ann', 'bob', 'cid']) await findUser(connection, userId as UserId);
      const { rows } = await sql<{ name: string; statement: string }>`
        SELECT name, statement FROM pg_prepared_statements ORDER BY name`.execute(connection);
      return rows.map(({ name, statement }) => `${name}: ${statement}`);
    });
  } finally {
    await db.destroy();
  }
}

test('a statement run a second time is prepared on its connection under a name of the portal', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const prepared = await preparedAfterThreeReads(portal.database, true);
  assert.equal(prepared.length, 1, JSON.stringify(prepared));
  assert.match(prepared[0] ?? '', /^vpn_portal_1: select "user_id", "is_disabled" from "users" where "user_id" = \$1$/);
  assert.deepEqual(await preparedAfterThreeReads(portal.database, false), []);
});

async function createFor(portal: TestPortal, userId: string): Promise<void> {
  const answer = await portal.post('/create', { user_id: userId, profile_id: 'employees' });
  assert.equal(answer.status, 200, answer.text);
}

/** As many creates at once as the pool has connections: every connection of the pool runs one. */
async function burstOfCreates(portal: TestPortal): Promise<void> {
  await Promise.all(Array.from({ length: POOL_SIZE }, (_, index) => createFor(portal, index % 2 ? 'bob' : 'ann')));
}

const RAN_AGAIN = "a change's connection was lost before its COMMIT; it runs again";

/** Creates on the portal's connections, another instance's migration, creates again: what the portal logged. */
async function createsAroundAMigration(portal: TestPortal, log: ReturnType<typeof capturedLog>): Promise<string[]> {
  await burstOfCreates(portal);
  await burstOfCreates(portal);
  // What a newer instance's migration does to the table a create returns whole.
  await onServer(portal.database, (client) => client.query('ALTER TABLE wg_peers ADD COLUMN added_later text'));
  await burstOfCreates(portal);
  const listed = (await portal.admin.connectionList(true))['employees'] ?? [];
  assert.equal(listed.length, 3 * POOL_SIZE, 'every create answered and stored once');
  return log.lines().flatMap((line) => (typeof line.msg === 'string' ? [line.msg] : []));
}

test("another instance's migration under a prepared create costs no call: it runs again on a fresh connection", async (t) => {
  const log = capturedLog('warn');
  const portal = await startTestPortal({ config: { databasePoolSize: POOL_SIZE }, logger: log.logger });
  t.after(() => portal.close());
  const logged = await createsAroundAMigration(portal, log);
  // It was the stale statement that was met, and the change that ran again.
  assert.ok(logged.includes(RAN_AGAIN), JSON.stringify(logged));
});

test('with databasePreparedStatements false the portal prepares nothing: a migration meets no stale statement', async (t) => {
  const log = capturedLog('warn');
  const portal = await startTestPortal({
    config: { databasePoolSize: POOL_SIZE, databasePreparedStatements: false },
    logger: log.logger,
  });
  t.after(() => portal.close());
  const logged = await createsAroundAMigration(portal, log);
  assert.ok(!logged.includes(RAN_AGAIN), JSON.stringify(logged));
});

test('when every name is given and a new text comes back later, the connection holding the old names is closed and the texts named anew', async (t) => {
  const location = await migrationTestLocation(t, 'names');
  // The monotonic clock the names' generations are timed on stands still from before the names
  // are made, and moves only when told below.
  let monotonic = performance.now();
  t.mock.method(performance, 'now', () => monotonic);
  const tick = (ms: number) => {
    monotonic += ms;
  };
  // One connection, so that each statement below runs on the same one while it lasts.
  const db = connectDatabase(location, { preparedStatements: true, poolSize: 1 });
  t.after(() => db.destroy());
  const numbered = (text: number) => sql<{ n: number }>`SELECT ${text}::int AS n, ${sql.raw(String(text))} AS text`;
  const backend = async () => (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db)).rows[0]?.pid;
  const prepared = async () =>
    (await sql<{ name: string }>`SELECT name FROM pg_prepared_statements ORDER BY name`.execute(db)).rows.map(
      ({ name }) => name,
    );

  const first = await backend();
  for (let text = 0; text < MOST_NAMES; text++) {
    await numbered(text).execute(db);
    await numbered(text).execute(db);
  }
  assert.equal((await prepared()).length, MOST_NAMES);
  // A new text, before the time of a new generation: unnamed, and the connection stays.
  tick(GENERATION_AT_LEAST_MS - 1);
  for (let run = 0; run < 3; run++) await numbered(MOST_NAMES).execute(db);
  assert.equal(await backend(), first);
  assert.equal((await prepared()).length, MOST_NAMES);

  // Later, it is named in a new generation; the connection it ran on held the old names: closed.
  tick(1);
  await numbered(MOST_NAMES).execute(db);
  const second = await backend();
  assert.notEqual(second, first);
  assert.deepEqual(await prepared(), []);
  await numbered(MOST_NAMES).execute(db);
  await numbered(0).execute(db);
  await numbered(0).execute(db);
  assert.deepEqual(await prepared(), [`vpn_portal_${MOST_NAMES + 1}`, `vpn_portal_${MOST_NAMES + 2}`]);
  // Named in the current generation only: this connection stays.
  assert.equal(await backend(), second);
});

test("after another instance's migration every pooled connection holds a stale statement: a read and a change made one at a time each get past them all", async (t) => {
  const portal = await startTestPortal({ config: { databasePoolSize: POOL_SIZE } });
  t.after(() => portal.close());
  // A larger pool of the test's own for the read: twenty stale connections in a row.
  const readPoolSize = 2 * POOL_SIZE;
  const db = connectDatabase(parseDatabaseLocation(portal.database, '/'), {
    preparedStatements: true,
    poolSize: readPoolSize,
  });
  t.after(() => db.destroy());
  const read = () => db.selectFrom('wg_peers').selectAll().where('user_id', '=', 'ann').execute();
  const keyed = (key: string) =>
    portal.post('/create', { user_id: 'ann', profile_id: 'employees' }, { 'idempotency-key': key });
  // Every connection of the read's pool prepares the read; the portal's, the create made in a transaction.
  for (let round = 0; round < 3; round++) {
    await Promise.all(Array.from({ length: readPoolSize }, read));
    const made = await Promise.all(Array.from({ length: POOL_SIZE }, (_, index) => keyed(`warm-${round}-${index}`)));
    assert.deepEqual(new Set(made.map((answer) => answer.status)), new Set([200]));
  }

  await onServer(portal.database, (client) => client.query('ALTER TABLE wg_peers ADD COLUMN added_later text'));
  // One at a time: each may be handed the stale connections one after the other.
  assert.equal((await read()).length, 3 * POOL_SIZE, 'the read answered');
  const made = await keyed('after');
  assert.equal(made.status, 200, made.text);
});

test('with databaseRetryFor PT0S a read that meets a stale statement fails with it: nothing is tried again', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const db = connectDatabase(parseDatabaseLocation(portal.database, '/'), {
    preparedStatements: true,
    poolSize: 1,
    retryForMs: 0,
  });
  t.after(() => db.destroy());
  // With a value, or it would never be named.
  const read = () => db.selectFrom('wg_peers').selectAll().where('user_id', '=', 'ann').execute();
  for (let round = 0; round < 3; round++) await read();

  await onServer(portal.database, (client) => client.query('ALTER TABLE wg_peers ADD COLUMN added_later text'));
  await assert.rejects(read(), /cached plan must not change result type/);
  assert.deepEqual(await read(), [], 'the next read, on a fresh connection, answers');
});
