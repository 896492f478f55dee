// Migration 0041 on the kept answers 0039 linked to their configurations: the link moves into the
// kind and id of what an answer handed out (`configuration` and the same id, a dropped answer
// staying dropped), an answer with no link keeps none, and connection_id is gone. Runs on SQLite
// and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { findIdempotencyRecord } from '../../src/storage/idempotency.js';
import { migrationTestLocation } from '../support/postgres.js';

test('0041 moves the configuration of each kept answer into what it handed out, and drops connection_id', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, 'hand-outs'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0040-scim-profile-checks');
  const record = (idempotencyKey: string, state: string, connectionId: string | null) => ({
    key_lineage: 'secret',
    idempotency_key: idempotencyKey,
    call: connectionId === null ? 'disable_user' : 'create',
    fingerprint: 'f'.repeat(64),
    owner: 'o'.repeat(24),
    state,
    status: 200,
    answer: state === 'done' ? 'sealed' : null,
    created_at: '2026-11-30T09:00:00+00:00',
    expires_at: '2026-12-01T09:00:00+00:00',
    connection_id: connectionId,
  });
  // The table as it was before 0041 (the schema types describe it after).
  const untyped = db as unknown as Kysely<Record<string, Record<string, unknown>>>;
  await untyped
    .insertInto('idempotency_records')
    .values([
      record('kept', 'done', 'wg-public-key='),
      record('dropped', 'revoked', 'alice-laptop-cn'),
      record('other-call', 'done', null),
    ])
    .execute();

  assert.equal((await migrateToLatest(db))[0], '0041-kept-answer-hand-outs');
  const read = async (key: string) => {
    const found = await findIdempotencyRecord(db, 'secret', key);
    return found === undefined ? undefined : { state: found.state, handedOut: found.handedOut };
  };
  assert.deepEqual(await read('kept'), {
    state: 'done',
    handedOut: { kind: 'configuration', id: 'wg-public-key=' },
  });
  assert.deepEqual(await read('dropped'), {
    state: 'revoked',
    handedOut: { kind: 'configuration', id: 'alice-laptop-cn' },
  });
  assert.deepEqual(await read('other-call'), { state: 'done', handedOut: null });
  const columns = (await db.introspection.getTables()).find((table) => table.name === 'idempotency_records')?.columns;
  assert.deepEqual(
    columns?.map((column) => column.name).filter((name) => name.includes('connection') || name.includes('handed')),
    ['handed_out_kind', 'handed_out_id'],
  );
});
