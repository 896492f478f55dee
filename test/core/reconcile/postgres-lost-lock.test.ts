// A full pass whose lock was lost with its connection (a server restart, a session ended) must
// not go on beside the instance that takes the lock next: it stops before its next step, logged
// at warn. The pass is held at its first statement, by a plugin on the scheduler's database,
// while the test ends the lock connection's session. PostgreSQL only (advisory locks).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql, type OperationNode } from 'kysely';
import { pino } from 'pino';
import { ReconcileScheduler } from '../../../src/core/reconcile/index.js';
import { ExclusiveLocks } from '../../../src/storage/exclusive.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { startTestPortal } from '../../support/test-portal.js';
import { until, within } from '../../support/until.js';

/** The pass's first statement, under its lock: the expired configurations it reads before the nodes. */
const expiredConfigurationsRead = (node: OperationNode, text: string): boolean =>
  node.kind === 'SelectQueryNode' &&
  text.includes('"wg_peers"') &&
  text.includes('"LimitNode"') &&
  text.includes('"expires_at"');

test('a full pass whose lock was lost with its connection stops before its nodes and its statistics', async (t) => {
  const warnings: string[] = [];
  const logger = pino(
    { level: 'debug' },
    { write: (line: string) => warnings.push(String((JSON.parse(line) as Record<string, unknown>)['msg'])) },
  );
  const portal = await startTestPortal({ config: { reconcileInterval: 'PT1H' } });
  // Last first: the other instance's lock, the scheduler, then the portal (its pool waits for both).
  const cleanups: (() => Promise<void> | void)[] = [portal.close];
  t.after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });
  const ctx = portal.portal.ctx;
  const hold = new HoldStatement(expiredConfigurationsRead);
  // A node's turn begins by weighing the node: its peers counted.
  const nodeTurn = new HoldStatement(
    (node, text) => node.kind === 'SelectQueryNode' && text.includes('"node_number"') && text.includes('"count"'),
    { armed: false },
  );
  const statistics = new HoldStatement(
    (node, text) => node.kind === 'InsertQueryNode' && text.includes('"live_stats"'),
  );
  const scheduler = new ReconcileScheduler({
    ...ctx,
    logger,
    db: ctx.db.withPlugin(hold).withPlugin(nodeTurn).withPlugin(statistics),
  });
  cleanups.push(async () => {
    scheduler.stop();
    hold.release();
    statistics.release();
    nodeTurn.release();
    await scheduler.idle();
  });
  const holders = async () =>
    (
      await sql<{ pid: number }>`
        SELECT pid FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`.execute(
        ctx.db,
      )
    ).rows.map((row) => row.pid);
  // The portal's own passes and their housekeeping are done: the locks held from now on are the pass's.
  await portal.portal.reconcileNow();
  await until('the portal’s own reconcile work is done', async () => (await holders()).length === 0);
  const pass = scheduler.runAll();
  await within(hold.reached, 'the full pass reached the held statement', 15_000);

  // The holder of the full pass's lock (the portal's own scheduler may hold others meanwhile).
  const reconcileHolders = async () =>
    (
      await sql<{ pid: number }>`
        SELECT pid FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND objid = (hashtext('reconcile')::bigint & 4294967295)::oid
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`.execute(ctx.db)
    ).rows.map((row) => row.pid);
  const [lockHolder, ...others] = await reconcileHolders();
  assert.ok(lockHolder !== undefined && others.length === 0, 'the pass holds its lock');
  await sql`SELECT pg_terminate_backend(${lockHolder})`.execute(ctx.db);
  await until('the server released the lock', async () => (await reconcileHolders()).length === 0);
  // Another instance takes the lock now: the held pass must not go on beside it.
  const other = new ExclusiveLocks(ctx.db);
  let otherFinish = (): void => {};
  let otherStarted = false;
  const otherPass = other.run('reconcile', async () => {
    otherStarted = true;
    await new Promise<void>((resolve) => (otherFinish = resolve));
  });
  cleanups.push(async () => {
    otherFinish();
    await otherPass;
  });
  await until('another instance holds the lock', async () => otherStarted);

  nodeTurn.arm();
  hold.release();
  await within(pass, 'the held pass ended', 15_000);
  const reached = (statement: HoldStatement) =>
    Promise.race([statement.reached.then(() => true), Promise.resolve(false)]);
  assert.equal(await reached(nodeTurn), false, 'no node’s turn began after the lock was lost');
  assert.equal(await reached(statistics), false, 'nor were the live statistics recorded');
  assert.ok(
    warnings.some((message) => message === 'reconcile pass stopped: its lock was lost with its database connection'),
    `warned: ${JSON.stringify(warnings)}`,
  );
  otherFinish();
  assert.deepEqual(await otherPass, { ran: true, value: undefined });
});

test('a portal that stops ends its full pass before the next node, and idle() does not wait for the rest', async (t) => {
  const portal = await startTestPortal({ config: { reconcileInterval: 'PT1H' } });
  const ctx = portal.portal.ctx;
  const hold = new HoldStatement(expiredConfigurationsRead);
  const nodeTurn = new HoldStatement(
    (node, text) => node.kind === 'SelectQueryNode' && text.includes('"node_number"') && text.includes('"count"'),
    { armed: false },
  );
  const scheduler = new ReconcileScheduler({ ...ctx, db: ctx.db.withPlugin(hold).withPlugin(nodeTurn) });
  t.after(async () => {
    hold.release();
    nodeTurn.release();
    await scheduler.idle();
    await portal.close();
  });
  await portal.portal.reconcileNow();
  const pass = scheduler.runAll();
  await within(hold.reached, 'the full pass reached the held statement', 15_000);
  scheduler.stop();
  nodeTurn.arm();
  hold.release();
  await within(pass, 'the stopped pass ended', 15_000);
  await within(scheduler.idle(), 'idle() after the stop', 5_000);
  assert.equal(
    await Promise.race([nodeTurn.reached.then(() => true), Promise.resolve(false)]),
    false,
    'no node’s turn began after the stop',
  );
});
