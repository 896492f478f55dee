// Migration 0042 on answers kept before 0039 and 0041 linked them to what they handed out: those
// of the calls that hand out a secret are dropped (`not-kept`, no answer), the rest stay as they
// were. Runs on SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { connectDatabase, migrateToLatest, migrateUpTo } from '../../src/storage/database.js';
import { findIdempotencyRecord } from '../../src/storage/idempotency.js';
import { migrationTestLocation } from '../support/postgres.js';

test('0042 drops the unlinked kept answers of the calls that hand out a secret, and leaves the others', async (t) => {
  const db = connectDatabase(await migrationTestLocation(t, 'unlinked'));
  t.after(() => db.destroy());
  await migrateUpTo(db, '0041-kept-answer-hand-outs');
  const record = (idempotencyKey: string, call: string, state: string, handedOut: [string, string] | null) => ({
    key_lineage: 'secret',
    idempotency_key: idempotencyKey,
    call,
    fingerprint: 'f'.repeat(64),
    owner: 'o'.repeat(24),
    state,
    status: state === 'pending' ? null : 200,
    answer: state === 'done' ? 'sealed' : null,
    created_at: '2026-11-30T09:00:00+00:00',
    expires_at: '2026-12-01T09:00:00+00:00',
    handed_out_kind: handedOut?.[0] ?? null,
    handed_out_id: handedOut?.[1] ?? null,
  });
  await db
    .insertInto('idempotency_records')
    .values([
      record('create-before-0039', 'create', 'done', null),
      record('admin-key-before-0041', 'create_admin_key', 'done', null),
      record('webhook-before-0041', 'create_webhook', 'done', null),
      record('rotation-before-0041', 'rotate_webhook_secret', 'done', null),
      record('token-before-0041', 'enrollment_token', 'done', null),
      record('linked', 'create_admin_key', 'done', ['admin-key', 'k1']),
      record('dropped', 'create', 'revoked', ['configuration', 'alice-laptop-cn']),
      record('running', 'create_admin_key', 'pending', null),
      record('other-call', 'disable_user', 'done', null),
    ])
    .execute();

  assert.ok((await migrateToLatest(db)).includes('0042-unlinked-kept-answers'));
  const read = async (key: string) => {
    const found = await findIdempotencyRecord(db, 'secret', key);
    return found === undefined ? undefined : `${found.state}${found.answer === null ? '' : ' with answer'}`;
  };
  for (const key of [
    'create-before-0039',
    'admin-key-before-0041',
    'webhook-before-0041',
    'rotation-before-0041',
    'token-before-0041',
  ])
    assert.equal(await read(key), 'not-kept', key);
  assert.equal(await read('linked'), 'done with answer');
  assert.equal(await read('dropped'), 'revoked');
  assert.equal(await read('running'), 'pending', 'a request under way keeps its reservation');
  assert.equal(await read('other-call'), 'done with answer', 'an answer holding no secret is given as before');
});
