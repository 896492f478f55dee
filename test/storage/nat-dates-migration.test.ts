// Migration 0038 on NAT history recorded before a node's date was held to the portal's clock:
// changes dated in the future (one past year 9999, as such dates were stored) move back to when
// they were recorded, in order, so the newest change is the one in force now. Runs on SQLite
// and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { asNodeNumber } from '../../src/shared/ids.js';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { natMappingHistory, natMappingOfNodeAt } from '../../src/storage/nat-mappings.js';
import { migrationTestLocation } from '../support/postgres.js';

test('0038 moves each future-dated NAT change back to when it was recorded, so a newer change is found again', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, 'nat-dates'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0037-imported-authorizations');
  const row = (nodeNumber: number, appliedAt: string, recordedAt: string, ports: number) => ({
    node_number: nodeNumber,
    applied_at: appliedAt,
    mode: 'deterministic',
    ranges: '["10.44.0.0/24"]',
    public_addresses: '["192.0.2.10"]',
    ports_per_client: ports,
    recorded_at: recordedAt,
  });
  // The table as it was before 0038 (the same as after: only its dates change).
  const untyped = db as unknown as Kysely<Record<string, Record<string, unknown>>>;
  await untyped
    .insertInto('nat_mappings')
    .values([
      row(0, '2026-03-01T08:00:00+00:00', '2026-03-01T08:00:05+00:00', 250),
      // Dated 2099 when the portal heard it at 10:00; the next change, at 11:00, was dated after it.
      row(0, '2099-01-01T00:00:00+00:00', '2026-03-01T10:00:00+00:00', 200),
      row(0, '2099-01-01T00:00:01+00:00', '2026-03-01T11:00:00+00:00', 100),
      // A year past 9999, as it was written: text that sorts before every real date.
      row(1, '2026-03-01T08:00:00+00:00', '2026-03-01T08:00:00+00:00', 250),
      row(1, '+010000-01-01T00:00+00:00', '2026-03-01T09:00:00+00:00', 200),
    ])
    .execute();

  assert.equal((await migrateToLatest(db))[0], '0038-nat-dates-settled');
  const dates = async (node: number) =>
    (await natMappingHistory(db, asNodeNumber(node))).map((entry) => [
      entry.appliedAt,
      entry.mapping.mode === 'deterministic' ? entry.mapping.settings.portsPerClient : null,
    ]);
  assert.deepEqual(await dates(0), [
    ['2026-03-01T08:00:00+00:00', 250],
    ['2026-03-01T10:00:00+00:00', 200],
    ['2026-03-01T11:00:00+00:00', 100],
  ]);
  assert.deepEqual(await dates(1), [
    ['2026-03-01T08:00:00+00:00', 250],
    ['2026-03-01T09:00:00+00:00', 200],
  ]);
  const inForce = await natMappingOfNodeAt(db, asNodeNumber(0), '2026-03-01T11:30:00+00:00');
  assert.equal(inForce?.appliedAt, '2026-03-01T11:00:00+00:00', 'the newest change is in force, not the one of 08:00');
});
