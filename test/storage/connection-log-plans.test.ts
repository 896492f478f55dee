// Pages of the connection log (the Admin API's `connection_log`, newest first) read an index on
// both databases, asked of the database's own planner with the very query the page runs: a
// user's history reads (user, start, id), and the next page of any listing starts in the index
// at its cursor rather than walking every newer session first. PostgreSQL is told to avoid
// sequential scans where it can, as it would on a history of millions of rows. So do the daily
// housekeeping's batches: the blanking of the client's own address, the deletion of old history,
// and that of old NAT mappings, which asks of each whether a session of its node and time is kept;
// and the pages that count what a legal hold keeps, a held user's history and audit entries.
// And what every reconcile pass asks of each node: its open WireGuard and OpenVPN sessions.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asNodeNumber, asUserId } from '../../src/shared/ids.js';
import {
  blankingQuery,
  connectionLogQuery,
  heldCountingQuery,
  openOpenVpnSessionsQuery,
  openWireGuardSessionsQuery,
  pruningQuery,
  type ConnectionLogFilter,
} from '../../src/storage/connection-log.js';
import type { Db } from '../../src/storage/database.js';
import { heldAuditCountingQuery } from '../../src/storage/audit-log.js';
import { natPruningQuery } from '../../src/storage/nat-mappings.js';
import { queryPlan } from '../support/query-plans.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

let portal: TestPortal;
let db: Db;

before(async () => {
  portal = await startTestPortal();
  db = portal.portal.ctx.db;
});
after(() => portal.close());

const cursor = { connectedAt: '2026-03-01T12:00:00+00:00', logId: '0195514c-0000-7000-8000-000000000000' };

/** The plan of the page, one line per step. */
function planOf(filter: Omit<ConnectionLogFilter, 'limit'>): Promise<string> {
  return queryPlan(db, connectionLogQuery(db, { ...filter, limit: 101 }).compile());
}

const fullScan = /\bSCAN connection_log\b(?! USING)|Seq Scan on connection_log/;

test("a node's open WireGuard sessions, asked for at every pass, read their own index", async () => {
  const plan = await queryPlan(db, openWireGuardSessionsQuery(db, asNodeNumber(3)).compile());
  assert.match(plan, /connection_log_open_wireguard_node/, plan);
  assert.doesNotMatch(plan, fullScan, plan);
});

test("a node's open OpenVPN sessions, asked for at every pass, read their own index, in their order", async () => {
  for (const startedBefore of [undefined, '2026-03-01T12:00:00+00:00']) {
    const plan = await queryPlan(db, openOpenVpnSessionsQuery(db, asNodeNumber(3), startedBefore).compile());
    assert.match(plan, /connection_log_open_openvpn/, plan);
    assert.doesNotMatch(plan, fullScan, plan);
    assert.doesNotMatch(plan, /TEMP B-TREE|Sort/, plan);
  }
});

test("a user's history reads the user's index, not every session", async () => {
  const plan = await planOf({ userId: asUserId('alice@example.org') });
  assert.match(plan, /connection_log_user_id/, plan);
  assert.doesNotMatch(plan, fullScan, plan);
  assert.doesNotMatch(plan, /TEMP B-TREE|Sort/, plan);
});

test("the next page of a user's history starts in that index at the cursor", async () => {
  const plan = await planOf({ userId: asUserId('alice@example.org'), after: cursor });
  assert.match(
    plan,
    /connection_log_user_id \(user_id=\? AND connected_at<\?\)|connection_log_user_id[\s\S]*Index Cond: .*user_id.*connected_at\)::text <= /,
    plan,
  );
});

test('the next page of the whole history starts in the (start, id) index at the cursor', async () => {
  const plan = await planOf({ after: cursor });
  assert.match(
    plan,
    /connection_log_started \(connected_at<\?\)|connection_log_started[\s\S]*Index Cond: \(\(connected_at\)::text <= /,
    plan,
  );
  assert.doesNotMatch(plan, fullScan, plan);
});

test("a batch of the housekeeping's blanking of client addresses reads only the rows that still have one", async () => {
  for (const held of [[], ['alice@example.org']]) {
    const plan = await queryPlan(db, blankingQuery(db, cursor.connectedAt, held, 10_000).compile());
    assert.match(plan, /connection_log_with_address/, plan);
    assert.doesNotMatch(plan, fullScan, plan);
  }
});

test("a batch of the housekeeping's deletion of old history finds it by its end and deletes it by key", async () => {
  for (const held of [[], ['alice@example.org']]) {
    const plan = await queryPlan(db, pruningQuery(db, cursor.connectedAt, held, 10_000).compile());
    assert.match(plan, /connection_log_disconnected_at/, plan);
    assert.doesNotMatch(plan, fullScan, plan);
  }
});

test("a batch of the housekeeping's deletion of old NAT mappings looks for each one's sessions by node and start", async () => {
  const plan = await queryPlan(db, natPruningQuery(db, cursor.connectedAt, 10_000).compile());
  assert.match(plan, /connection_log_node_started/, plan);
  assert.doesNotMatch(plan, fullScan, plan);
  assert.doesNotMatch(plan, /TEMP B-TREE|Sort/, plan);
});

test("a page of the count of a held user's kept history starts in the user's index at its cursor, in its order", async () => {
  for (const after of [undefined, cursor]) {
    const page = { before: cursor.connectedAt, user: 'alice@example.org', withAddress: true, after, limit: 1_000 };
    const plan = await queryPlan(db, heldCountingQuery(db, page).compile());
    assert.match(plan, /connection_log_user_id/, plan);
    assert.doesNotMatch(plan, fullScan, plan);
    assert.doesNotMatch(plan, /TEMP B-TREE|Sort/, plan);
    if (after !== undefined)
      assert.match(
        plan,
        /connection_log_user_id \(user_id=\? AND connected_at>\?\)|connection_log_user_id[\s\S]*Index Cond: .*user_id.*connected_at\)::text >= /,
        plan,
      );
  }
});

test("a page of the count of a held user's kept audit entries reads the user's index from its cursor, in its order", async () => {
  for (const after of [undefined, '0195514c00000000aaaaaaaa']) {
    const page = { at: cursor.connectedAt, user: 'alice@example.org', after, limit: 1_000 };
    const plan = await queryPlan(db, heldAuditCountingQuery(db, page).compile());
    assert.match(plan, /audit_log_user_id/, plan);
    assert.doesNotMatch(plan, /\bSCAN audit_log\b(?! USING)|Seq Scan on audit_log/, plan);
    assert.doesNotMatch(plan, /TEMP B-TREE|Sort/, plan);
  }
});
