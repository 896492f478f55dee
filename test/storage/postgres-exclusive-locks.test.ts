// An instance whose host vanishes without closing its lock connection (no FIN, no RST: a power
// cut, a network gone) must not hold its advisory locks until the system's TCP keepalive gives
// up (some two hours): the lock connection asks the server for keepalives of its own, and the
// server ends the silent session, releasing the locks, within a bound. The silence is real: an
// nftables rule drops every packet between the lock connection and the server, both ways, so
// the server's keepalive probes go unanswered (a proxy in this process could not do it: its
// kernel would answer them). The instance notices too: a run under a lock whose connection went
// silent is told so by the connection's periodic check, though it sends nothing on it, before
// the server lets the lock go. PostgreSQL only, and root (nft).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { connectDatabase } from '../../src/storage/database.js';
import { ExclusiveLocks, LockLost, type HeldLock } from '../../src/storage/exclusive.js';
import { createTestDatabase, dropTestDatabase, postgresServerUrl } from '../support/postgres.js';
import { until } from '../support/until.js';

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
  const heal = cutOff(url, clientPort);
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
    heal();
    finish();
    await held.catch(() => undefined);
  }
});

/** Drops every packet between `clientPort` and the server at `url`, both ways, until the answer is called. */
function cutOff(url: string, clientPort: number): () => void {
  const serverPort = Number(new URL(url).port);
  const table = `vpnp_lock_cut_${process.pid}_${clientPort}`;
  execFileSync('nft', ['-f', '-'], {
    input: `table inet ${table} {
      chain out {
        type filter hook output priority 0; policy accept;
        tcp sport ${serverPort} tcp dport ${clientPort} drop
        tcp sport ${clientPort} tcp dport ${serverPort} drop
      }
    }\n`,
  });
  let healed = false;
  return () => {
    if (healed) return;
    healed = true;
    execFileSync('nft', ['delete', 'table', 'inet', table]);
  };
}

test('a run whose lock connection went silent is told its lock was lost within seconds, though it sends nothing', async (t) => {
  const server = postgresServerUrl();
  const { name, url } = await createTestDatabase(server);
  t.after(() => dropTestDatabase(server, name));
  // No statement limit: only the lock connection's own check can notice the silence.
  const db = connectDatabase({ dialect: 'postgres', url });
  const other = connectDatabase({ dialect: 'postgres', url });
  t.after(async () => {
    await other.destroy();
    await db.destroy();
  });
  // Checked every second, answered within two; the server lets go after some three silent seconds.
  const keepalive = { idleSeconds: 1, intervalSeconds: 1, count: 2 };
  const locks = new ExclusiveLocks(db, keepalive);

  let finish = (): void => {};
  let held = null as HeldLock | null;
  const run = locks.run('reconcile', async (lock) => {
    held = lock;
    await new Promise<void>((resolve) => (finish = resolve));
  });
  t.after(() => finish());
  await until('the run holds its lock', async () => held !== null);
  // Several checks answered: a live connection is not taken for lost.
  await sleep(3_000);
  assert.equal(held?.lost, false, 'a connection that answers keeps its locks');
  const holder = (
    await sql<{ client_port: number }>`
      SELECT a.client_port FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database()`.execute(other)
  ).rows;
  assert.equal(holder.length, 1, 'one advisory lock is held');

  const heal = cutOff(url, holder[0]?.client_port ?? 0);
  try {
    const cut = Date.now();
    await until('the run is told its lock was lost', async () => held?.lost === true, 10_000);
    t.diagnostic(`told ${Date.now() - cut} ms after its connection went silent`);
    assert.throws(() => held?.check(), LockLost);
    const others = new ExclusiveLocks(other, keepalive);
    await until(
      'the server let the lock go, and another instance took it',
      async () => (await others.run('reconcile', async () => 'taken over')).ran,
      TAKEN_OVER_WITHIN_MS,
    );
  } finally {
    heal();
  }
  // The partition healed: the instance's next run takes a fresh connection, the old one is closed.
  finish();
  assert.deepEqual(await run, { ran: true, value: undefined });
  assert.deepEqual(await locks.run('reconcile', async () => 'again'), { ran: true, value: 'again' });
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
