// A PostgreSQL restart, a failover behind a proxy or a dropped connection costs no failed call:
// a transaction whose connection was lost before its COMMIT is run again on a fresh connection,
// a read is asked again, and a COMMIT whose answer was lost is resolved by reading back the
// change's marker — never by guessing, so nothing is made twice and nothing is lost; one whose
// answer did not come in time is answered 503 and read back behind the call. The
// server is one of this test's own (test/support/private-postgres.ts), restarted under two
// portal instances while calls stream in.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import type { WireGuardKey } from '../../src/shared/ids.js';
import { connectDatabase } from '../../src/storage/database.js';
import { wireGuardPublicKey } from '../../src/wireguard/keys.js';
import { capturedLog } from '../support/captured-log.js';
import { createTestDatabase, dropTestDatabase, onServer, postgresServerUrl } from '../support/postgres.js';
import { privateDatabaseFor } from '../support/private-postgres.js';
import { startPostgresCutter } from '../support/tcp-proxies.js';
import { startTestPortal, type ApiResponse, type TestPortal } from '../support/test-portal.js';
import { parseWireGuardFile } from '../support/wireguard-file.js';

const STREAM_MS = 9000;
/** About 50 calls a second: each round is a create, often a delete or a disable, and a read. */
const CALL_EVERY_MS = 50;
const RESTARTS_AT_MS = [2000, 5500];

function publicKeyOf(response: ApiResponse): string {
  return wireGuardPublicKey(parseWireGuardFile(response.text).interface.get('PrivateKey') as WireGuardKey);
}

test('PostgreSQL restarted twice under two portal instances and a stream of calls: no call fails, nothing is made twice, nothing is lost', async (t) => {
  const { server, url, atEnd } = await privateDatabaseFor(t);
  const first = await startTestPortal({ database: url });
  atEnd(() => first.close());
  const second = await startTestPortal({ database: url });
  atEnd(() => second.close());
  const portals: readonly TestPortal[] = [first, second];

  const created = new Map<string, string>(); // user → public key
  const deleted = new Set<string>(); // users whose configuration was deleted
  const disabled = new Set<string>();
  const failures: string[] = [];
  let calls = 0;
  const check = (name: string, response: ApiResponse, expected: number) => {
    calls++;
    if (response.status !== expected) failures.push(`${name}: ${response.status} ${response.text}`);
  };
  const startedAt = performance.now();
  const restarts = RESTARTS_AT_MS.map(async (at) => {
    await sleep(at);
    await server.restart();
  });
  const inFlight = new Set<Promise<void>>();
  for (let index = 0; performance.now() - startedAt < STREAM_MS; index++) {
    const portal = portals[index % 2] as TestPortal;
    const userId = `user${index}`;
    const job = async () => {
      const response = await portal.post('/create', { user_id: userId, profile_id: 'employees' });
      check(`create ${userId}`, response, 200);
      if (response.status !== 200) return;
      created.set(userId, publicKeyOf(response));
      // Every third configuration is deleted again, every fifth user disabled, from the other instance.
      const other = portals[(index + 1) % 2] as TestPortal;
      if (index % 3 === 0) {
        const gone = await other.post('/delete_connection', {
          user_id: userId,
          connection_id: created.get(userId) ?? '',
        });
        check(`delete_connection ${userId}`, gone, 204);
        if (gone.status === 204) deleted.add(userId);
      } else if (index % 5 === 0) {
        const off = await other.post('/disable_user', { user_id: userId });
        check(`disable_user ${userId}`, off, 204);
        if (off.status === 204) disabled.add(userId);
      }
      check('users', await portal.get('/users'), 200);
    };
    const running = job().finally(() => inFlight.delete(running));
    inFlight.add(running);
    await sleep(CALL_EVERY_MS);
  }
  await Promise.all([...inFlight, ...restarts]);
  assert.deepEqual(failures, [], `${failures.length} of ${calls} calls failed`);
  assert.ok(created.size > 50, `only ${created.size} creates in ${STREAM_MS} ms`);

  const db = connectDatabase({ dialect: 'postgres', url });
  atEnd(() => db.destroy());
  const peers = await db.selectFrom('wg_peers').select(['user_id', 'public_key']).execute();
  const users = await db.selectFrom('users').select(['user_id', 'is_disabled']).execute();
  // Each create made its user and its configuration exactly once; each delete took it away.
  assert.equal(users.length, created.size);
  assert.deepEqual(
    peers.map((peer) => `${peer.user_id} ${peer.public_key}`).sort(),
    [...created]
      .filter(([userId]) => !deleted.has(userId))
      .map(([userId, key]) => `${userId} ${key}`)
      .sort(),
  );
  assert.deepEqual(
    users
      .filter((user) => Number(user.is_disabled) === 1)
      .map((user) => user.user_id)
      .sort(),
    [...disabled].sort(),
  );
  // One audit row per successful change: none written twice by a transaction run again.
  const audited = await sql<{ call: string; count: string }>`
    SELECT call, count(*)::text AS count FROM audit_log WHERE status < 300 GROUP BY call`.execute(db);
  const auditCount = new Map(audited.rows.map((row) => [row.call, Number(row.count)]));
  assert.equal(auditCount.get('create'), created.size);
  assert.equal(auditCount.get('delete_connection'), deleted.size);
  assert.equal(auditCount.get('disable_user'), disabled.size);
});

/**
 * A portal on a private server of the test's own, through a cutter, with bob's first
 * configuration made. Unnamed statements, so that each statement's text is on the wire each
 * time for the cutter to find.
 */
async function portalBehindCutter(t: TestContext, databaseTimeout = 'PT5S') {
  const { url, atEnd } = await privateDatabaseFor(t);
  const cutter = await startPostgresCutter(url);
  atEnd(() => cutter.close());
  const log = capturedLog('info');
  const portal = await startTestPortal({
    database: cutter.url,
    logger: log.logger,
    config: { databasePreparedStatements: false, databaseTimeout },
  });
  atEnd(() => portal.close());
  assert.equal((await portal.post('/create', { user_id: 'bob', profile_id: 'employees' })).status, 200);
  return { url, atEnd, cutter, log, portal };
}

// A create with an Idempotency-Key is made in a transaction (its answer is kept with it); a
// plain one is one statement, its own transaction (src/core/issuing/issue.ts).
for (const made of ['in a transaction', 'in one statement'] as const) {
  for (const mode of ['after-forwarding', 'instead-of-forwarding'] as const) {
    const outcome = mode === 'after-forwarding' ? 'the server committed' : 'the server never got it';
    const where = made === 'in a transaction' ? 'right at COMMIT' : 'right at its one statement';
    test(`PostgreSQL: a create made ${made} whose connection is cut ${where} (${outcome}) is resolved by reading back its marker and answers its configuration once`, async (t) => {
      const { url, atEnd, cutter, log, portal } = await portalBehindCutter(t);

      const cut =
        made === 'in a transaction'
          ? cutter.cutNextCommit('INSERT INTO wg_peers', mode)
          : cutter.cutNextStatement('INSERT INTO wg_peers', mode);
      const headers: Record<string, string> = made === 'in a transaction' ? { 'idempotency-key': 'bob-phone' } : {};
      const response = await portal.post('/create', { user_id: 'bob', profile_id: 'employees' }, headers);
      await cut;
      assert.equal(response.status, 200, response.text);
      const key = publicKeyOf(response);

      const db = connectDatabase({ dialect: 'postgres', url });
      atEnd(() => db.destroy());
      const bobs = await db.selectFrom('wg_peers').select('public_key').where('user_id', '=', 'bob').execute();
      assert.equal(bobs.length, 2, 'the first create and this one, once');
      assert.ok(bobs.some((peer) => peer.public_key === key));
      const audited = await db.selectFrom('audit_log').select('call').where('user_id', '=', 'bob').execute();
      assert.equal(audited.length, 2);
      const resolved = log.lines().filter((line) => /read back/.test(line.msg ?? ''));
      assert.equal(resolved.length, 1, log.text());
      assert.match(
        resolved[0]?.msg ?? '',
        mode === 'after-forwarding' ? /read back: it committed/ : /read back: it did not commit/,
      );
    });
  }
}

test('a read whose connection broke while the database takes no new connection fails with the reason the server gives, and its pooled connection is given back once', async (t) => {
  const server = postgresServerUrl();
  const { name, url } = await createTestDatabase(server);
  t.after(() => dropTestDatabase(server, name));
  // One pooled connection: one that was never given back would keep every later call waiting.
  const db = connectDatabase({ dialect: 'postgres', url }, { poolSize: 1, retryForMs: 5_000, timeoutMs: 3_000 });
  t.after(() => db.destroy());
  const sessionOfRead = async () =>
    onServer(server, async (client) => {
      const found = await client.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND query LIKE '%pg_sleep%'",
        [name],
      );
      return found.rows[0]?.pid;
    });

  const read = db.selectNoFrom(sql<string>`pg_sleep(3)::text`.as('slept')).execute();
  let pid = await sessionOfRead();
  for (; pid === undefined; pid = await sessionOfRead()) await sleep(20);
  // The database turns connections away, then the read's session is ended under it.
  await onServer(server, (client) => client.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`));
  await onServer(server, (client) => client.query('SELECT pg_terminate_backend($1)', [pid]));
  await assert.rejects(read, /not currently accepting connections/);

  await onServer(server, (client) => client.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`));
  const answer = await db.selectNoFrom(sql<number>`1`.as('one')).executeTakeFirstOrThrow();
  assert.equal(answer.one, 1, 'the one pooled connection is free again');
});

test('PostgreSQL: a disable_user whose COMMIT never reached the server, and whose read back lost its own answer, is not taken for committed: it runs again and the user is disabled', async (t) => {
  const { url, atEnd, cutter, log, portal } = await portalBehindCutter(t);

  const commitCut = cutter.cutNextCommit('set "is_disabled"', 'instead-of-forwarding');
  const disabling = portal.post('/disable_user', { user_id: 'bob' });
  await commitCut;
  // The read back's insert reaches the server and leaves its tombstone; its answer is lost, so
  // it asks again and meets the row it left itself.
  const readBackCut = cutter.cutNextStatement('on conflict ("marker_id")', 'after-forwarding');
  await readBackCut;
  const response = await disabling;
  assert.ok(response.status < 300, `${response.status} ${response.text}`);

  const db = connectDatabase({ dialect: 'postgres', url });
  atEnd(() => db.destroy());
  const bob = await db.selectFrom('users').select('is_disabled').where('user_id', '=', 'bob').executeTakeFirst();
  assert.equal(Number(bob?.is_disabled), 1, 'the answer said disabled: so is the database');
  const audited = await db
    .selectFrom('audit_log')
    .select('call')
    .where('call', '=', 'disable_user')
    .where('status', '<', 300)
    .execute();
  assert.equal(audited.length, 1, 'the disable committed once');
  const resolved = log.lines().filter((line) => /read back/.test(line.msg ?? ''));
  assert.equal(resolved.length, 1, log.text());
  assert.match(resolved[0]?.msg ?? '', /read back: it did not commit/);
});

test('PostgreSQL: a create in one statement whose answer does not come in time answers 503 within databaseTimeout; read back behind the call, the configuration it made is announced', async (t) => {
  const { url, atEnd, cutter, log, portal } = await portalBehindCutter(t, 'PT2S');
  const announced: string[] = [];
  portal.portal.ctx.events.afterCommit((event) => {
    if (event.type === 'configuration.created') announced.push(event.configuration.userId);
  });

  const cut = cutter.cutNextStatement('INSERT INTO wg_peers', 'answer-withheld');
  const startedAt = performance.now();
  const response = await portal.post('/create', { user_id: 'bob', profile_id: 'employees' });
  await cut;
  assert.equal(response.status, 503, response.text);
  assert.ok(performance.now() - startedAt < 4000, 'answered within databaseTimeout and a margin');

  for (;;) {
    const resolved = log.lines().find((line) => /read back: it/.test(line.msg ?? ''));
    if (resolved !== undefined) {
      assert.match(resolved.msg ?? '', /read back: it committed/);
      break;
    }
    assert.ok(performance.now() - startedAt < 15_000, `nothing read back:\n${log.text()}`);
    await sleep(100);
  }
  const db = connectDatabase({ dialect: 'postgres', url });
  atEnd(() => db.destroy());
  const bobs = await db.selectFrom('wg_peers').select('public_key').where('user_id', '=', 'bob').execute();
  assert.equal(bobs.length, 2, 'the first create and this one, which the server made');
  assert.deepEqual(announced, ['bob'], 'announced once, behind the call');
});
