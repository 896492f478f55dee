// What every reconcile pass reads for each node, and what each /metrics scrape counts, read an
// index on both databases: asked of the database's own planner with the very statements the
// portal sends. A node's wanted peers are its own configurations (the node's index) less those of
// disabled users and suspended devices, never a read of every configuration or every user; the
// counts of configurations per profile and node (WireGuard's and OpenVPN's) read an index alone,
// never the rows; so does whether a node holds any OpenVPN configuration. PostgreSQL is told to
// avoid sequential scans where it can, as it would at a million configurations.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { asNodeNumber } from '../../src/shared/ids.js';
import type { Db } from '../../src/storage/database.js';
import { certificateCountsQuery, certificateOnNodeQuery } from '../../src/storage/certificates.js';
import { peerCountsQuery, wantedOnNodeQuery } from '../../src/storage/wg-peers.js';
import { queryPlan } from '../support/query-plans.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

let portal: TestPortal;
let db: Db;

before(async () => {
  portal = await startTestPortal();
  db = portal.portal.ctx.db;
});
after(() => portal.close());

/** A whole table read: SQLite's SCAN without an index, or by an index it walks end to end; PostgreSQL's Seq Scan. */
const wholeTable = (table: string, allowedIndex?: string): RegExp =>
  new RegExp(`\\bSCAN ${table}\\b(?! USING (?:COVERING )?INDEX ${allowedIndex ?? '-'}\\b)|Seq Scan on ${table}\\b`);

test("a node's wanted peers are read by the node's index, with no read of every user or device", async () => {
  const plan = await queryPlan(
    db,
    wantedOnNodeQuery(db, { now: '2026-03-01T12:00:00+00:00', nodeNumber: asNodeNumber(7) }).compile(),
  );
  assert.match(plan, /wg_peers_node/, plan);
  assert.doesNotMatch(plan, wholeTable('wg_peers'), plan);
  assert.doesNotMatch(plan, wholeTable('users', 'users_disabled'), plan);
  assert.doesNotMatch(plan, wholeTable('devices', 'devices_suspended'), plan);
});

for (const [what, query, table] of [
  ['WireGuard', peerCountsQuery, 'wg_peers'],
  ['OpenVPN', certificateCountsQuery, 'certificates'],
] as const) {
  test(`the count of ${what} configurations per profile and node reads the index by node and profile alone`, async () => {
    const plan = await queryPlan(db, query(db).compile());
    assert.match(
      plan,
      new RegExp(`SCAN ${table} USING COVERING INDEX ${table}_node|Index Only Scan using ${table}_node`),
      plan,
    );
    assert.doesNotMatch(plan, /TEMP B-TREE|Sort/, plan);
  });
}

test('whether a node holds any OpenVPN configuration, asked at every pass of a node without OpenVPN, reads the index by node', async () => {
  const plan = await queryPlan(db, certificateOnNodeQuery(db, asNodeNumber(7)).compile());
  assert.match(
    plan,
    /SEARCH certificates USING COVERING INDEX certificates_node|Index Only Scan using certificates_node/,
    plan,
  );
});
