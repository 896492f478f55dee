// The daily housekeeping's deletion of old RADIUS accounting records finds them by the time of
// their event, asked of the database's own planner with the very statement a batch runs: an
// outbox that grew while a RADIUS server was unreachable is not read whole for every batch.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { radiusOutboxPruningQuery } from '../../src/storage/radius-outbox.js';
import { queryPlan } from '../support/query-plans.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

let portal: TestPortal;

before(async () => {
  portal = await startTestPortal();
});
after(() => portal.close());

test("a batch of the housekeeping's deletion of old accounting records finds them by their event's time", async () => {
  const db = portal.portal.ctx.db;
  const plan = await queryPlan(
    db,
    radiusOutboxPruningQuery(db, '2026-03-01T12:00:00+00:00', ['192.0.2.1:1813'], 10_000).compile(),
  );
  assert.match(plan, /radius_outbox_event_at/, plan);
  assert.doesNotMatch(plan, /\bSCAN radius_outbox\b(?! USING)|Seq Scan on radius_outbox/, plan);
});
