// Migration 0011 on the data before it: every admin key gets the lineage of the first key it
// was rotated from, and the answers kept for admin keys (bound to a reusable name: whose they
// were cannot be told) are dropped, the secret's kept under its own lineage. Runs on SQLite and,
// in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { migrationTestLocation } from '../support/postgres.js';

const AT = '2026-11-20T09:00:00+00:00';

test("0011 gives each admin key the lineage of its first key and keeps only the secret's kept answers", async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, 'lineage'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0010-listing-generation');
  const key = (
    keyId: string,
    name: string,
    createdAt: string,
    more: { replaced_by?: string; revoked_at?: string } = {},
  ) => ({
    key_id: keyId,
    name,
    scope: 'write',
    secret_hash: 'x'.repeat(64),
    created_at: createdAt,
    replaced_by: null,
    revoked_at: null,
    ...more,
  });
  // The tables as they were before 0011 (the schema types describe them after it).
  const untyped = db as unknown as Kysely<Record<string, Record<string, unknown>>>;
  await untyped
    .insertInto('admin_keys')
    .values([
      // mdm: made, rotated twice, revoked; then made again with the same name and rotated once.
      key('a1', 'mdm', '2026-11-01T09:00:00+00:00', { replaced_by: 'a2', revoked_at: AT }),
      key('a2', 'mdm', '2026-11-02T09:00:00+00:00', { replaced_by: 'a3', revoked_at: AT }),
      key('a3', 'mdm', '2026-11-03T09:00:00+00:00', { revoked_at: AT }),
      key('b1', 'mdm', '2026-11-21T09:00:00+00:00', { replaced_by: 'b2' }),
      key('b2', 'mdm', '2026-11-22T09:00:00+00:00'),
      key('c1', 'other', '2026-11-05T09:00:00+00:00'),
    ])
    .execute();
  const record = (keyName: string, idempotencyKey: string) => ({
    key_name: keyName,
    idempotency_key: idempotencyKey,
    call: 'create',
    fingerprint: 'f'.repeat(64),
    owner: 'o'.repeat(24),
    state: 'done',
    status: 200,
    answer: 'sealed',
    created_at: AT,
    expires_at: '2026-11-21T09:00:00+00:00',
  });
  await untyped
    .insertInto('idempotency_records')
    .values([record('mdm', 'idem-1'), record('secret', 'idem-1'), record('other', 'idem-2')])
    .execute();

  // 0011 runs first; later migrations follow it.
  assert.equal((await migrateToLatest(db))[0], '0011-admin-key-lineage');
  const lineages = await db.selectFrom('admin_keys').select(['key_id', 'lineage']).orderBy('key_id').execute();
  assert.deepEqual(
    lineages.map((row) => `${row.key_id}:${row.lineage}`),
    ['a1:a1', 'a2:a1', 'a3:a1', 'b1:b1', 'b2:b1', 'c1:c1'],
  );
  const kept = await db.selectFrom('idempotency_records').select(['key_lineage', 'idempotency_key']).execute();
  assert.deepEqual(kept, [{ key_lineage: 'secret', idempotency_key: 'idem-1' }]);
});
