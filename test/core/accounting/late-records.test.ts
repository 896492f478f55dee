// A record whose event is already older than accounting.radius.maxAge when it is queued is still
// sent: after a portal outage longer than maxAge, a WireGuard session is dated by its first
// handshake and a stop by the last handshake and 3 minutes, both from the time the portal did
// not run. Dropped before a first transmission, the firewall never heard of a session that the
// server, up all along, would have taken. Nor does the daily housekeeping delete such a record
// first: a configured server's records are the worker's, however old.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import type { PortalEvent } from '../../../src/core/events.js';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { runHousekeepingIfDue } from '../../../src/core/reconcile/housekeeping.js';
import { RadiusAccountingWorker } from '../../../src/core/accounting/worker.js';
import { formatAtom } from '../../../src/shared/time.js';
import { insertOutboxRecords } from '../../../src/storage/radius-outbox.js';
import { ManualClock } from '../../support/admin-keys.js';
import { detailRecord, type FreeRadius, startFreeRadius } from '../../support/freeradius.js';
import { shiftedClock } from '../../support/shifted-clock.js';
import { startTestPortal } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

/** alice's WireGuard session began (its `at` is the story's). */
const sessionStarted = {
  type: 'session.started',
  at: new Date(0),
  configuration: {
    userId: asUserId('alice'),
    profileId: asProfileId('employees'),
    connectionId: 'key-alice',
    vpnProto: 'wireguard',
    nodeNumber: asNodeNumber(0),
  },
  ipFour: '10.44.0.7',
  ipSix: 'fd44::7',
  originatingIp: '203.0.113.9',
} satisfies PortalEvent;

/** A FreeRADIUS of the test's own, and its shared secret in a file as the portal reads it. */
async function radiusServer(t: TestContext): Promise<{ radius: FreeRadius; secretFile: string }> {
  const radius = await startFreeRadius();
  t.after(() => radius.close());
  const folder = await mkdtemp(join(tmpdir(), 'radius-secret-'));
  t.after(() => rm(folder, { recursive: true, force: true }));
  const secretFile = join(folder, 'radius.secret');
  await writeFile(secretFile, `${radius.secret}\n`, { mode: 0o600 });
  return { radius, secretFile };
}

/** A portal sending to the test's FreeRADIUS with a maxAge of one hour, on a clock the story can shift. */
async function lateRecordsPortal(t: TestContext) {
  const { radius, secretFile } = await radiusServer(t);
  const clock = shiftedClock();
  const portal = await startTestPortal({
    config: {
      accounting: {
        radius: { servers: [{ address: `${radius.host}:${radius.port}`, secretFile }], maxAge: 'PT1H' },
      },
    },
    clock,
  });
  t.after(() => portal.close());
  return { radius, clock, portal, ctx: portal.portal.ctx };
}

test('a session that began while the portal was down (longer than maxAge) still reaches a server that answers', async (t) => {
  const { radius, clock, portal, ctx } = await lateRecordsPortal(t);

  // The device has been online for two hours, through the portal's outage; the first pass after
  // it dates the session by its first handshake, as the docs say.
  const began = new Date(clock.now().getTime() - 2 * 3_600_000);
  const started: PortalEvent = { ...sessionStarted, at: began };
  await ctx.events.change(ctx.db, async (_trx, record) => record(started));
  const droppedRows = async () =>
    (await portal.admin.auditLog({ user_id: 'alice' })).audit_log
      .filter((row) => row.call === 'radius_accounting_dropped')
      .map((row) => row.detail);
  const starts = async () =>
    (await radius.records()).filter(
      (record) => record['User-Name'] === 'alice' && record['Acct-Status-Type'] === 'Start',
    );
  await until(
    'the Start to reach the server, or to be dropped',
    async () => (await starts()).length > 0 || (await droppedRows()).length > 0,
    30_000,
  );
  const dropped = await droppedRows();
  assert.deepEqual(dropped, [], 'nothing is dropped while the server answers');
  const [start] = await starts();
  // Sent with the time it waited: the firewall knows the session began two hours ago.
  const delay = Number(start?.['Acct-Delay-Time']);
  assert.ok(delay >= 7200 && delay < 7300, `Acct-Delay-Time ${delay}`);
});

test("the housekeeping leaves a configured server's records to the worker, however old: a record queued after an outage is sent, one of a server taken out goes", async (t) => {
  const { radius, secretFile } = await radiusServer(t);
  const clock = new ManualClock('2026-01-10T12:00:00Z');
  const server = `${radius.host}:${radius.port}`;
  const portal = await startTestPortal({
    config: { accounting: { radius: { servers: [{ address: server, secretFile }], maxAge: 'PT1H' } } },
    clock,
  });
  t.after(() => portal.close());
  await portal.reconcile();
  const { ctx } = portal.portal;
  // The housekeeping gets there before the worker: the worker is held still meanwhile.
  await portal.portal.radiusAccounting?.stop();

  // The first pass after a long outage: a session two hours old, and a record a server no longer
  // configured was still waiting for.
  await ctx.events.change(ctx.db, async (_trx, record) =>
    record({ ...sessionStarted, at: new Date(clock.now().getTime() - 2 * 3_600_000) }),
  );
  await insertOutboxRecords(ctx.db, [
    {
      recordId: 'taken-out',
      server: '192.0.2.1:1813',
      acctSessionId: 'session-taken-out',
      connectionId: 'key-bob',
      address: null,
      record: '{}',
      eventAt: formatAtom(new Date(clock.now().getTime() - 2 * 3_600_000)),
    },
  ]);
  clock.advance(86_400_000);
  const housekeeping = await runHousekeepingIfDue(ctx);
  assert.equal(housekeeping?.retention.kinds['accounting_outbox']?.removed, 1, 'only the record nobody sends goes');
  const left = await ctx.db.selectFrom('radius_outbox').select(['server', 'acct_session_id']).execute();
  assert.deepEqual(
    left.map((row) => row.server),
    [server],
    "alice's Start stays for the worker",
  );

  const worker = new RadiusAccountingWorker(ctx);
  worker.start();
  t.after(() => worker.stop());
  const start = await detailRecord(
    radius,
    "alice's Start",
    (entry) => entry['User-Name'] === 'alice' && entry['Acct-Status-Type'] === 'Start',
    30_000,
  );
  const delay = Number(start['Acct-Delay-Time']);
  assert.ok(delay >= 26 * 3600 && delay < 26 * 3600 + 100, `Acct-Delay-Time ${delay}`);
});

test('a portal stopped during the one transmission of a late record keeps it: it is sent after the restart, not dropped', async (t) => {
  const { radius, clock, portal, ctx } = await lateRecordsPortal(t);
  // The server does not answer while the portal sends the first transmission of a Start two
  // hours old (the first pass after a long outage), and the portal is stopped meanwhile.
  await radius.stop();
  await ctx.events.change(ctx.db, async (_trx, record) =>
    record({ ...sessionStarted, at: new Date(clock.now().getTime() - 2 * 3_600_000) }),
  );
  // The Start's attempts (its Interim-Update, also due, waits beside it).
  const attempts = async () =>
    (await ctx.db.selectFrom('radius_outbox').select(['attempts', 'record']).execute())
      .filter((row) => row.record.includes('"statusType":"Start"'))
      .map((row) => Number(row.attempts));
  await until('the first transmission to be under way', async () => (await attempts())[0] === 1, 10_000);
  await portal.portal.radiusAccounting?.stop();
  const dropped = (await portal.admin.auditLog({ user_id: 'alice' })).audit_log.filter(
    (row) => row.call === 'radius_accounting_dropped',
  );
  assert.deepEqual(
    dropped.map((row) => row.detail),
    [],
    'a transmission the portal cut off is not the one that went unanswered',
  );
  assert.deepEqual(await attempts(), [0], 'the Start waits, its one transmission still owed');

  await radius.start();
  const worker = new RadiusAccountingWorker(ctx);
  worker.start();
  t.after(() => worker.stop());
  await detailRecord(
    radius,
    "alice's Start",
    (entry) => entry['User-Name'] === 'alice' && entry['Acct-Status-Type'] === 'Start',
    30_000,
  );
});
