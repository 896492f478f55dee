// A prepared query is built once and run with each call's own values, in the right places,
// next to the constants it was built with; a value the builder would write into the SQL text
// is refused rather than frozen. On SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { preparedQuery, type Slot } from '../../src/storage/prepared-query.js';
import { startTestPortal } from '../support/test-portal.js';

const NOW = '2026-11-25T12:00:00+00:00';

const insertUser = preparedQuery((db, value: Slot<{ userId: string; seen: string }>) =>
  db
    .insertInto('users')
    .values({ user_id: value('userId'), created_at: NOW, last_seen: value('seen'), auth_data: null })
    .returning(['user_id', 'created_at', 'last_seen']),
);

const usersSeenSince = preparedQuery((db, value: Slot<{ since: string }>) =>
  db
    .selectFrom('users')
    .select('user_id')
    .where('last_seen', '>=', value('since'))
    .where('is_disabled', '=', 0)
    .orderBy('user_id'),
);

test('a prepared query runs again and again, each time with its own values in their places', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const { db } = portal.portal.ctx;
  for (const [userId, seen] of [
    ['ann', '2026-11-20T08:00:00+00:00'],
    ['bob', '2026-11-24T08:00:00+00:00'],
    ['cid', '2026-11-25T08:00:00+00:00'],
  ] as const) {
    assert.deepEqual((await insertUser(db, { userId, seen })).rows, [
      { user_id: userId, created_at: NOW, last_seen: seen },
    ]);
  }
  assert.deepEqual((await usersSeenSince(db, { since: '2026-11-24T00:00:00+00:00' })).rows, [
    { user_id: 'bob' },
    { user_id: 'cid' },
  ]);
  assert.deepEqual((await usersSeenSince(db, { since: '2026-11-25T00:00:00+00:00' })).rows, [{ user_id: 'cid' }]);
  // Inside a transaction too, and what it wrote is gone with the rollback.
  await assert.rejects(
    db.transaction().execute(async (trx) => {
      await insertUser(trx, { userId: 'dan', seen: NOW });
      assert.deepEqual((await usersSeenSince(trx, { since: NOW })).rows, [{ user_id: 'dan' }]);
      throw new Error('rolled back');
    }),
    /rolled back/,
  );
  assert.deepEqual((await usersSeenSince(db, { since: NOW })).rows, []);
});

test('a value the builder would write into the SQL text is refused, not frozen into the query', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const frozen = preparedQuery((db, value: Slot<{ userId: string }>) =>
    db
      .selectFrom('users')
      .select('user_id')
      .where('user_id', '=', sql.lit(value('userId'))),
  );
  await assert.rejects(frozen(portal.portal.ctx.db, { userId: 'ann' }), /"userId" is not a parameter of select/);
});
