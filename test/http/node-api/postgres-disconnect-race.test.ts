// Two portal instances on one PostgreSQL database each get the node's report of one OpenVPN
// disconnect (the report, and its retry a second later after the answer was lost) while the first
// one's change has closed the session's row and not committed yet: the second reads the session
// open, and its change waits for the row; once the first committed it finds the row closed and
// announces nothing. One session.ended, one webhook delivery. PostgreSQL only: on SQLite one
// writing transaction runs at a time (test/core/sessions/session-ends-once.test.ts holds a report
// before its change instead).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { sql } from 'kysely';
import type { PortalEvent } from '../../../src/core/events.js';
import { connectionHistory } from '../../../src/storage/connection-log.js';
import {
  openVpnConfiguration,
  openVpnEmployees,
  reportOpenVpnConnect,
  reportOpenVpnDisconnect,
} from '../../support/openvpn-sessions.js';
import { startTestPortal } from '../../support/test-portal.js';
import { subscribe } from '../../support/webhook-subscriptions.js';

test('a disconnect reported to two instances while the first one’s change is still open is announced once, by the change that closed the row', async (t) => {
  const first = await startTestPortal({ config: openVpnEmployees });
  t.after(() => first.close());
  const second = await startTestPortal({ config: openVpnEmployees, database: first.database });
  t.after(() => second.close());
  const db = first.portal.ctx.db;
  await subscribe(db, 'wh_sessions', ['session.ended']);
  const published = { first: 0, second: 0 };
  first.portal.ctx.events.afterCommit((event) => {
    if (event.type === 'session.ended') published.first += 1;
  });
  second.portal.ctx.events.afterCommit((event) => {
    if (event.type === 'session.ended') published.second += 1;
  });
  const commonName = await openVpnConfiguration(first, 'ada');
  await reportOpenVpnConnect(first, commonName, { originating_ip: '192.0.2.10', ip_four: '10.60.0.2' });

  // The first instance's change holds, once the connection log closed the row (a listener after it).
  let reach = (): void => {};
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  let release = (): void => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let holding = true;
  first.portal.ctx.events.inTransaction(async (event: PortalEvent) => {
    if (event.type !== 'session.ended' || !holding) return;
    holding = false;
    reach();
    await released;
  });
  const reported = reportOpenVpnDisconnect(first, commonName, { ip_four: '10.60.0.2' });
  await reached;

  // The retry reaches the other instance, which reads the session open and waits for its row.
  const retried = reportOpenVpnDisconnect(second, commonName, { ip_four: '10.60.0.2' });
  const waitingForALock = async (): Promise<number> => {
    const row = await sql<{ waiting: string }>`select count(*) as waiting from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`.execute(db);
    return Number(row.rows[0]?.waiting ?? 0);
  };
  for (let tries = 0; (await waitingForALock()) === 0; tries += 1) {
    assert.ok(tries < 500, 'the second instance never waited for the first one’s row');
    await sleep(10);
  }
  release();
  await Promise.all([reported, retried]);
  await new Promise((resolve) => setImmediate(resolve));

  assert.deepEqual(published, { first: 1, second: 0 }, 'announced once, by the instance whose change closed the row');
  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .select('event_type')
    .where('event_type', '=', 'session.ended')
    .execute();
  assert.equal(deliveries.length, 1, 'one webhook delivery of the end');
  assert.deepEqual(
    (await connectionHistory(db, commonName)).map((entry) => entry.disconnectedAt !== null),
    [true],
  );
});
