// A change rides out a PostgreSQL outage by running again on a fresh connection: each outage,
// not the whole call, gets `databaseRetryFor`, and a COMMIT the driver never sent needs no read
// back. The sessions are ended for real (pg_terminate_backend) at the moment each test names.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type KyselyPlugin, type PluginTransformResultArgs, type QueryResult, type UnknownRow } from 'kysely';
import type { Db } from '../../src/storage/database.js';
import { capturedLog } from '../support/captured-log.js';
import { startTestPortal } from '../support/test-portal.js';

/** Ends the session of the transaction's own connection: the statement fails with 57P01. */
async function endOwnSession(trx: Db): Promise<void> {
  await sql`SELECT pg_terminate_backend(pg_backend_pid())`.execute(trx);
}

async function portalWithLog(databaseRetryFor = 'PT5S') {
  const log = capturedLog('warn');
  const portal = await startTestPortal({ logger: log.logger, config: { databaseRetryFor } });
  const messages = () => log.lines().map((line) => line.msg ?? '');
  return { portal, log, messages };
}

test('a change whose session the server ended just before its COMMIT runs again at once: the COMMIT was never sent, so nothing is read back', async (t) => {
  const { portal, log, messages } = await portalWithLog();
  t.after(portal.close);
  const { ctx } = portal.portal;
  // As in a restart under load: the answer to the change's last statement and the server's
  // notice that it ends the session arrive together, and the driver refuses the COMMIT after.
  let sessionToEnd: number | null = null;
  const markerInserts = new Set<unknown>();
  const endSessionAfterMarker: KyselyPlugin = {
    transformQuery(args) {
      if (JSON.stringify(args.node).includes('INSERT INTO change_markers')) markerInserts.add(args.queryId);
      return args.node;
    },
    async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
      const pid = sessionToEnd;
      if (pid === null || !markerInserts.has(args.queryId)) return args.result;
      sessionToEnd = null;
      const failed = () => messages().filter((msg) => /a database connection failed/.test(msg)).length;
      const failedBefore = failed();
      await sql`SELECT pg_terminate_backend(${pid})`.execute(ctx.db);
      while (failed() === failedBefore) await sleep(10);
      return args.result;
    },
  };
  const db = ctx.db.withPlugin(endSessionAfterMarker);

  let attempts = 0;
  await ctx.events.change(db, async (trx) => {
    attempts++;
    const own = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(trx);
    if (attempts === 1) sessionToEnd = own.rows[0]?.pid ?? null;
  });

  assert.equal(attempts, 2, log.text());
  assert.ok(messages().includes("a change's connection was lost before its COMMIT; it runs again"), log.text());
  assert.ok(!messages().some((msg) => /read back/.test(msg)), log.text());
});

test('a change that meets a second outage after the server answered again gets a new databaseRetryFor for it, and commits', async (t) => {
  const { portal, log } = await portalWithLog('PT1S');
  t.after(portal.close);
  const { ctx } = portal.portal;

  let attempts = 0;
  const startedAt = performance.now();
  const made = await ctx.events.change(ctx.db, async (trx) => {
    attempts++;
    // A restart ends the first try; the second works on longer than the whole window before
    // the next restart ends it too; the third commits.
    if (attempts === 1) await endOwnSession(trx);
    if (attempts === 2) {
      await sql`SELECT 1`.execute(trx);
      await sleep(1500);
      await endOwnSession(trx);
    }
    return 'committed';
  });

  assert.equal(made, 'committed', log.text());
  assert.equal(attempts, 3);
  assert.ok(performance.now() - startedAt > 1500);
});

test('a server that ends every session a change starts gets three outages out of it, then the change fails as unavailable', async (t) => {
  const { portal } = await portalWithLog();
  t.after(portal.close);
  const { ctx } = portal.portal;

  let attempts = 0;
  const change = ctx.events.change(ctx.db, async (trx) => {
    attempts++;
    await endOwnSession(trx);
  });

  await assert.rejects(change, (error: Error & { code?: string }) => error.code === '57P01');
  assert.equal(attempts, 4, 'the first try and one after each of three outages');
});
