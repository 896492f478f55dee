// An instance whose host vanishes without closing its lock connection (no FIN, no RST: a power
// cut, a network gone) must not hold its advisory locks until the system's TCP keepalive gives
// up (some two hours): the lock connection asks the server for keepalives of its own, and the
// server ends the silent session, releasing the locks, within a bound. The silence is real: an
// nftables rule drops every packet between the lock connection and the server, both ways, so
// the server's keepalive probes go unanswered (a proxy in this process could not do it: its
// kernel would answer them). PostgreSQL only, and root (nft).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { connectDatabase } from '../../src/storage/database.js';
import { ExclusiveLocks } from '../../src/storage/exclusive.js';
import { createTestDatabase, dropTestDatabase, postgresServerUrl } from '../support/postgres.js';

/** With the test's keepalive (first probe after 1 s, two probes a second apart), the server lets go within seconds. */
const TAKEN_OVER_WITHIN_MS = 30_000;

test('the locks of an instance whose host went silent are taken by another instance within seconds', async (t) => {
  const server = postgresServerUrl();
  const { name, url } = await createTestDatabase(server);
  t.after(() => dropTestDatabase(server, name));
  // Its statements give up after 2 s: the one that releases the lock after the cut gets no answer.
  const dead = connectDatabase({ dialect: 'postgres', url }, { limitStatements: true, timeoutMs: 2_000 });
  const alive = connectDatabase({ dialect: 'postgres', url });
  t.after(async () => {
    await alive.destroy();
    await dead.destroy();
  });
  const keepalive = { idleSeconds: 1, intervalSeconds: 1, count: 2 };
  const deadLocks = new ExclusiveLocks(dead, keepalive);
  const aliveLocks = new ExclusiveLocks(alive, keepalive);

  let finish = (): void => {};
  let started = false;
  const held = deadLocks.run('reconcile', async () => {
    started = true;
    await new Promise<void>((resolve) => (finish = resolve));
  });
  while (!started) await sleep(5);
  const holder = (
    await sql<{ client_port: number }>`
      SELECT a.client_port FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database()`.execute(alive)
  ).rows;
  assert.equal(holder.length, 1, 'one advisory lock is held');
  const clientPort = holder[0]?.client_port ?? 0;
  assert.deepEqual(await aliveLocks.run('reconcile', async () => 'too early'), { ran: false });

  // From now on nothing passes between the lock connection and the server, either way.
  const serverPort = Number(new URL(url).port);
  const table = `vpnp_lock_test_${process.pid}`;
  execFileSync('nft', ['-f', '-'], {
    input: `table inet ${table} {
      chain out {
        type filter hook output priority 0; policy accept;
        tcp sport ${serverPort} tcp dport ${clientPort} drop
        tcp sport ${clientPort} tcp dport ${serverPort} drop
      }
    }\n`,
  });
  try {
    const cut = Date.now();
    for (;;) {
      const taken = await aliveLocks.run('reconcile', async () => 'taken over');
      if (taken.ran) break;
      assert.ok(Date.now() - cut < TAKEN_OVER_WITHIN_MS, `the lock is free within ${TAKEN_OVER_WITHIN_MS} ms`);
      await sleep(250);
    }
    t.diagnostic(`taken over ${Date.now() - cut} ms after the holder went silent`);
  } finally {
    execFileSync('nft', ['delete', 'table', 'inet', table]);
    finish();
    await held.catch(() => undefined);
  }
});

test('a server that refuses the keepalive settings still gives the locks, and the refusal is told once', async (t) => {
  const server = postgresServerUrl();
  const { name, url } = await createTestDatabase(server);
  t.after(() => dropTestDatabase(server, name));
  const db = connectDatabase({ dialect: 'postgres', url });
  t.after(() => db.destroy());
  const refusals: unknown[] = [];
  // A negative count is refused by every PostgreSQL, as tcp_user_timeout is by one before 12.
  const locks = new ExclusiveLocks(db, { idleSeconds: 20, intervalSeconds: 5, count: -1 }, (error) =>
    refusals.push(error),
  );

  assert.deepEqual(await locks.run('reconcile', async () => 'ran'), { ran: true, value: 'ran' });
  assert.equal(refusals.length, 1);
  assert.match(String(refusals[0]), /tcp_keepalives_count/);
  const other = new ExclusiveLocks(db);
  assert.deepEqual(
    await locks.run('reconcile', () => other.run('reconcile', async () => 'twice')),
    { ran: true, value: { ran: false } },
    'the lock is held while its run lasts',
  );
  assert.deepEqual(await locks.run('reconcile', async () => 'again'), { ran: true, value: 'again' });
  assert.equal(refusals.length, 1, 'a later lock connection does not ask again, nor is the refusal told again');
});
