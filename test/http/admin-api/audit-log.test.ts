// The audit log: every Admin API call that changed something is recorded in the transaction of
// its change (who, from where, which call, which parameters, what it touched), every refused
// or failed call after its answer; never a key, a file or a private key. GET /audit_log reads
// it by time, key and user, a page at a time; entries older than auditLogRetention are pruned.
// Refusals are coalesced: one row per source (an IPv6 client by its /64), reason and minute,
// counting the others in `repeated`.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { sql } from 'kysely';
import { runHousekeepingIfDue } from '../../../src/core/reconcile/housekeeping.js';
import type { WireGuardKey } from '../../../src/shared/ids.js';
import { pruneAuditLog } from '../../../src/storage/audit-log.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import { auditLog, authorize, bearer, makeAdminKey, ManualClock } from '../../support/admin-keys.js';
import { errorBody, rawRequest } from '../../support/raw-http.js';
import { startTestPortal, type ApiResponse, type TestPortal } from '../../support/test-portal.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

const DAY = 24 * 60 * 60 * 1000;

const connectionIdOf = (response: ApiResponse): string =>
  wireGuardPublicKey(parseWireGuardFile(response.text).interface.get('PrivateKey') as WireGuardKey);

test('every change is recorded with its key, address, call, parameters, status, user and configurations; never a key or a file', async (t) => {
  const portal = await startTestPortal({
    config: { adminApi: { allowList: ['127.0.0.0/8'], trustedProxyList: ['127.0.0.1/32'] } },
  });
  t.after(() => portal.close());
  const mdm = await makeAdminKey(portal, 'mdm', { scope: 'admin' });
  const from = { ...bearer(mdm), 'x-forwarded-for': '127.0.0.42' };

  const laptop = await portal.post(
    '/create',
    { user_id: 'alice', profile_id: 'employees', display_name: 'Laptop', expires_in: 'PT12H' },
    from,
  );
  const phone = await portal.post(
    '/create',
    { user_id: 'alice', profile_id: 'employees', display_name: 'Phone' },
    from,
  );
  await authorize(portal, 'alice', 'oauth-1');
  for (const path of ['/disable_user', '/enable_user'])
    assert.equal((await portal.post(path, { user_id: 'alice' }, from)).status, 204);
  assert.equal(
    (await portal.post('/delete_connection', { user_id: 'alice', connection_id: connectionIdOf(laptop) }, from)).status,
    204,
  );
  assert.equal((await portal.post('/delete_user_authorizations', { user_id: 'alice' }, from)).status, 204);
  assert.equal((await portal.post('/destroy', { user_id: 'alice' }, from)).status, 204);
  for (const path of ['/users', '/connection_list', '/audit_log'])
    assert.equal((await portal.get(path, {}, from)).status, 200);

  const rows = (await auditLog(portal)).reverse();
  assert.deepEqual(
    rows.map((row) => ({ ...row, auditId: 'id', at: 'at' })),
    [
      {
        call: 'create',
        parameters: { user_id: 'alice', profile_id: 'employees', display_name: 'Laptop', expires_in: 'PT12H' },
        status: 200,
        connectionIds: [connectionIdOf(laptop)],
      },
      {
        call: 'create',
        parameters: { user_id: 'alice', profile_id: 'employees', display_name: 'Phone' },
        status: 200,
        connectionIds: [connectionIdOf(phone)],
      },
      { call: 'disable_user', parameters: { user_id: 'alice' }, status: 204, connectionIds: [] },
      { call: 'enable_user', parameters: { user_id: 'alice' }, status: 204, connectionIds: [] },
      {
        call: 'delete_connection',
        parameters: { user_id: 'alice', connection_id: connectionIdOf(laptop) },
        status: 204,
        connectionIds: [connectionIdOf(laptop)],
      },
      { call: 'delete_user_authorizations', parameters: { user_id: 'alice' }, status: 204, connectionIds: [] },
      { call: 'destroy', parameters: { user_id: 'alice' }, status: 204, connectionIds: [connectionIdOf(phone)] },
    ].map((expected) => ({
      auditId: 'id',
      at: 'at',
      keyName: 'mdm',
      sourceAddress: '127.0.0.42',
      userId: 'alice',
      detail: null,
      repeated: 0,
      ...expected,
    })),
    'seven changes, in order; the reads are not recorded',
  );
  assert.match(rows[0]?.at ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
  const everything = JSON.stringify(await portal.portal.ctx.db.selectFrom('audit_log').selectAll().execute());
  for (const secret of [
    mdm,
    portal.secret,
    parseWireGuardFile(laptop.text).interface.get('PrivateKey') ?? '',
    'PrivateKey',
    '[Interface]',
  ]) {
    assert.equal(everything.includes(secret), false, `never in the audit log: ${secret.slice(0, 12)}…`);
  }
});

test('refusals, failures and calls that change nothing are recorded with their status and reason; a refused or failed call changed nothing', async (t) => {
  const portal = await startTestPortal({
    config: { adminApi: { allowList: ['127.0.0.0/8'], trustedProxyList: ['127.0.0.1/32'] } },
  });
  t.after(() => portal.close());
  const reader = await makeAdminKey(portal, 'reader', { scope: 'read' });
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);
  const someKey = connectionIdOf(await portal.post('/create', { user_id: 'bob', profile_id: 'employees' }));

  const outside = await portal.post('/destroy', { user_id: 'alice' }, { 'x-forwarded-for': '198.51.100.7' });
  assert.equal(outside.status, 403);
  const noToken = await rawRequest(`${portal.adminBase}/destroy`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'user_id=alice',
  });
  assert.equal(noToken.status, 401);
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' }, bearer(reader))).status, 403);
  assert.equal((await portal.post('/disable_user', { user_id: 'nobody' })).status, 400);
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'nope' })).status, 404);
  assert.equal(
    (await portal.post('/delete_connection', { user_id: 'alice', connection_id: someKey })).status,
    204,
    "bob's key: nothing to do",
  );
  assert.equal((await portal.get('/users', {}, bearer(reader))).status, 200);
  assert.deepEqual(await portal.admin.users(), ['alice', 'bob'], 'nothing was deleted or disabled');
  assert.deepEqual(await portal.admin.disabledUsers(), []);

  const rows = (await auditLog(portal)).slice(0, 6).reverse();
  assert.deepEqual(
    rows.map((row) => [
      row.keyName,
      row.sourceAddress,
      row.call,
      row.status,
      row.userId,
      row.connectionIds,
      row.detail,
    ]),
    [
      [null, '198.51.100.7', 'destroy', 403, null, [], 'source address 198.51.100.7 not in adminApi.allowList'],
      // Refused before the body is read: the body's parameters are not known.
      [null, '127.0.0.1', 'destroy', 401, null, [], 'no Bearer token'],
      [
        'reader',
        '127.0.0.1',
        'disable_user',
        403,
        'alice',
        [],
        'key "reader" has scope "read"; disable_user needs scope "write"',
      ],
      ['secret', '127.0.0.1', 'disable_user', 400, 'nobody', [], 'user does not exist'],
      ['secret', '127.0.0.1', 'create', 404, 'alice', [], 'no such "profile_id": "nope"; known profiles: employees'],
      ['secret', '127.0.0.1', 'delete_connection', 204, 'alice', [], null],
    ],
  );
});

test('a refused call whose user_id holds a NUL character is recorded on both databases, the value by its length and digest', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  // PostgreSQL cannot store U+0000 in text: recorded as sent, the row was lost there, and on
  // SQLite it was kept and stopped a later db copy to PostgreSQL.
  const refused = await portal.post('/create', { user_id: 'a\u0000b', profile_id: 'employees' });
  assert.equal(refused.status, 400);
  assert.equal(errorBody(refused.text), 'invalid value for "user_id"');

  const [row] = await auditLog(portal);
  const shown = `[3 characters, SHA-256 ${createHash('sha256').update('a\u0000b').digest('hex')}]`;
  assert.deepEqual(
    [row?.call, row?.status, row?.userId, row?.parameters],
    ['create', 400, shown, { user_id: shown, profile_id: 'employees' }],
    'the refusal is in the audit log, without the NUL character',
  );
});

/** A portal whose Admin API any address may reach through the test's trusted proxy (127.0.0.1). */
async function openPortal(
  t: { after: (fn: () => Promise<void>) => void },
  clock: ManualClock,
  config: Record<string, unknown> = {},
) {
  const portal = await startTestPortal({
    clock,
    config: { adminApi: { allowList: ['0.0.0.0/0', '::/0'], trustedProxyList: ['127.0.0.1/32'] }, ...config },
  });
  t.after(() => portal.close());
  return portal;
}

/** `count` requests at once with a wrong secret (or another credential) from `address`, each refused with 401. */
async function refusals(
  portal: TestPortal,
  address: string,
  count: number,
  authorization = 'Bearer wrong',
): Promise<void> {
  const headers = { 'x-forwarded-for': address, authorization };
  const statuses = await Promise.all(
    Array.from({ length: count }, (_, index) =>
      portal.get(index % 2 === 0 ? '/users' : '/connection_list', {}, headers),
    ),
  );
  assert.deepEqual(new Set(statuses.map((response) => response.status)), new Set([401]));
}

const refusalRows = async (portal: TestPortal) =>
  (await auditLog(portal)).reverse().map((row) => ({
    at: row.at,
    from: row.sourceAddress,
    status: row.status,
    detail: row.detail,
    repeated: row.repeated,
  }));

test('a flood of refusals is one row per source, reason and minute, counting the others: 200 bad keys at once from one address are one row with repeated 199', async (t) => {
  const clock = new ManualClock('2026-03-02T09:00:05Z');
  const portal = await openPortal(t, clock);

  await refusals(portal, '192.0.2.7', 200);
  const rows = await auditLog(portal);
  assert.equal(rows.length, 1, 'one row for the flood');
  // Which of the concurrent requests came first is the database's choice.
  assert.ok(['users', 'connection_list'].includes(rows[0]?.call ?? ''));
  assert.deepEqual(
    { ...rows[0], auditId: 'id', call: 'first' },
    {
      auditId: 'id',
      at: '2026-03-02T09:00:05+00:00',
      keyName: null,
      sourceAddress: '192.0.2.7',
      call: 'first',
      parameters: {},
      status: 401,
      userId: null,
      connectionIds: [],
      detail: 'wrong secret',
      repeated: 199,
    },
    "the first refusal's row; the other 199, also those of another call, counted into it",
  );
  const page = await portal.admin.auditLog({});
  assert.deepEqual(
    page.audit_log.map((entry) => [entry.id, entry.status, entry.repeated]),
    [[rows[0]?.auditId, 401, 199]],
    'GET /audit_log and the typed client show the count',
  );
  const raw = (await portal.get('/audit_log')).json() as { audit_log: Record<string, unknown>[] };
  assert.equal(raw.audit_log[0]?.['repeated'], 199);
});

test('refusals of another reason, another IPv4 address, another IPv6 /64 or another minute are rows of their own; one IPv6 /64 is one source', async (t) => {
  const clock = new ManualClock('2026-03-02T09:00:00Z');
  const portal = await openPortal(t, clock);

  await refusals(portal, '192.0.2.7', 3);
  await refusals(portal, '192.0.2.7', 2, 'Basic dXNlcjpwYXNz'); // another reason: no Bearer token
  await refusals(portal, '192.0.2.8', 2);
  clock.advance(10_000);
  await refusals(portal, '2001:db8:1:2::1', 2);
  await refusals(portal, '2001:db8:1:2:abcd::9', 3); // the same /64
  await refusals(portal, '2001:db8:1:3::1', 1); // another /64
  clock.advance(50_000); // 09:01:00, a new minute
  await refusals(portal, '192.0.2.7', 4);
  await refusals(portal, '2001:db8:1:2::ffff', 1);

  assert.deepEqual(await refusalRows(portal), [
    { at: '2026-03-02T09:00:00+00:00', from: '192.0.2.7', status: 401, detail: 'wrong secret', repeated: 2 },
    { at: '2026-03-02T09:00:00+00:00', from: '192.0.2.7', status: 401, detail: 'no Bearer token', repeated: 1 },
    { at: '2026-03-02T09:00:00+00:00', from: '192.0.2.8', status: 401, detail: 'wrong secret', repeated: 1 },
    { at: '2026-03-02T09:00:10+00:00', from: '2001:db8:1:2::1', status: 401, detail: 'wrong secret', repeated: 4 },
    { at: '2026-03-02T09:00:10+00:00', from: '2001:db8:1:3::1', status: 401, detail: 'wrong secret', repeated: 0 },
    { at: '2026-03-02T09:01:00+00:00', from: '192.0.2.7', status: 401, detail: 'wrong secret', repeated: 3 },
    { at: '2026-03-02T09:01:00+00:00', from: '2001:db8:1:2::ffff', status: 401, detail: 'wrong secret', repeated: 0 },
  ]);
});

test('403 refusals are coalesced by their reason too; calls that changed something or failed are never coalesced', async (t) => {
  const clock = new ManualClock('2026-03-02T09:00:00Z');
  const portal = await openPortal(t, clock);
  const reader = await makeAdminKey(portal, 'reader', { scope: 'read' });
  const from = { ...bearer(reader), 'x-forwarded-for': '192.0.2.7' };
  for (let index = 0; index < 3; index++)
    assert.equal((await portal.post('/disable_user', { user_id: `user${index}` }, from)).status, 403);
  assert.equal((await portal.post('/destroy', { user_id: 'alice' }, from)).status, 403);
  for (let index = 0; index < 2; index++)
    assert.equal((await portal.post('/disable_user', { user_id: 'nobody' })).status, 400);
  for (let index = 0; index < 2; index++)
    assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);

  assert.deepEqual(
    (await auditLog(portal)).reverse().map((row) => [row.call, row.userId, row.status, row.repeated]),
    [
      ['disable_user', 'user0', 403, 2],
      ['destroy', 'alice', 403, 0],
      ['disable_user', 'nobody', 400, 0],
      ['disable_user', 'nobody', 400, 0],
      ['create', 'alice', 200, 0],
      ['create', 'alice', 200, 0],
    ],
  );
});

test('coalesced refusals are pruned by auditLogRetention like any row, and a later refusal makes a new row', async (t) => {
  const clock = new ManualClock('2026-01-10T12:00:00Z');
  const portal = await openPortal(t, clock, { auditLogRetention: 'P1M' });
  await portal.reconcile(); // the start-up pass (and its housekeeping) is done before the clock moves
  await refusals(portal, '192.0.2.7', 5);
  clock.advance(40 * DAY);
  assert.equal((await runHousekeepingIfDue(portal.portal.ctx))?.auditEntriesDeleted, 1);
  await refusals(portal, '192.0.2.7', 2);
  assert.deepEqual(await refusalRows(portal), [
    // The housekeeping's own row, saying what it deleted.
    { at: '2026-02-19T12:00:00+00:00', from: 'local', status: 200, detail: null, repeated: 0 },
    { at: '2026-02-19T12:00:00+00:00', from: '192.0.2.7', status: 401, detail: 'wrong secret', repeated: 1 },
  ]);
});

test('the audit row is written in the transaction of the change: no change without its row, no row for a change that rolled back', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const db = portal.portal.ctx.db;

  // The audit log cannot be written: the change fails and is not stored.
  await sql`ALTER TABLE audit_log RENAME TO audit_log_away`.execute(db);
  const unrecordable = await portal.post('/create', { user_id: 'alice', profile_id: 'employees' });
  assert.equal(unrecordable.status, 500);
  await sql`ALTER TABLE audit_log_away RENAME TO audit_log`.execute(db);
  assert.deepEqual(await portal.admin.users(), [], 'no configuration without its audit row');

  // Another in-transaction listener fails after the audit row was written: both roll back.
  let failing = true;
  portal.portal.ctx.events.inTransaction(async (event) => {
    if (failing && event.type === 'admin.call' && event.status === 200) throw new Error('the webhook outbox is full');
  });
  const rolledBack = await portal.post('/create', { user_id: 'bob', profile_id: 'employees' });
  assert.equal(rolledBack.status, 500);
  failing = false;
  assert.deepEqual(await portal.admin.users(), []);
  assert.deepEqual(
    (await auditLog(portal)).map((row) => [row.call, row.userId, row.status, row.connectionIds]),
    [['create', 'bob', 500, []]],
    'only the failure is recorded, with no configuration: the row of the change rolled back with it',
  );
});

test('GET /audit_log filters by time, key and user and pages with a cursor, newest first', async (t) => {
  const clock = new ManualClock('2026-03-02T09:00:00Z');
  const portal = await startTestPortal({ clock });
  t.after(() => portal.close());
  const mdm = await makeAdminKey(portal, 'mdm', { scope: 'write' });
  for (let index = 0; index < 5; index++) {
    assert.equal(
      (
        await portal.post(
          '/create',
          { user_id: `user${index}`, profile_id: 'employees' },
          bearer(index % 2 === 0 ? mdm : portal.secret),
        )
      ).status,
      200,
    );
    clock.advance(DAY);
  }
  const page = (query: Record<string, string>) =>
    portal.get('/audit_log', query).then((response) => {
      assert.equal(response.status, 200, response.text);
      return response.json() as {
        audit_log: { id: string; at: string; key_name: string; user_id: string }[];
        next_cursor: string | null;
      };
    });

  const all = await page({});
  assert.deepEqual(
    all.audit_log.map((entry) => entry.user_id),
    ['user4', 'user3', 'user2', 'user1', 'user0'],
  );
  assert.equal(all.next_cursor, null);
  assert.deepEqual(
    (await page({ key: 'mdm' })).audit_log.map((entry) => entry.user_id),
    ['user4', 'user2', 'user0'],
  );
  assert.deepEqual(
    (await page({ key: 'secret' })).audit_log.map((entry) => entry.user_id),
    ['user3', 'user1'],
  );
  assert.deepEqual(
    (await page({ user_id: 'user2' })).audit_log.map((entry) => entry.at),
    ['2026-03-04T09:00:00+00:00'],
  );
  assert.deepEqual(
    (await page({ since: '2026-03-03T09:00:00Z', until: '2026-03-05' })).audit_log.map((entry) => entry.user_id),
    ['user2', 'user1'],
    'since is inclusive, until exclusive; a date is midnight UTC',
  );
  assert.deepEqual(
    (await page({ since: '2026-03-04T10:00:00+01:00' })).audit_log.map((entry) => entry.user_id),
    ['user4', 'user3', 'user2'],
    'an offset is honoured',
  );

  const first = await page({ limit: '2' });
  assert.deepEqual(
    first.audit_log.map((entry) => entry.user_id),
    ['user4', 'user3'],
  );
  assert.ok(first.next_cursor !== null);
  const second = await page({ limit: '2', cursor: first.next_cursor });
  assert.deepEqual(
    second.audit_log.map((entry) => entry.user_id),
    ['user2', 'user1'],
  );
  const third = await page({ limit: '2', cursor: second.next_cursor ?? '' });
  assert.deepEqual(
    third.audit_log.map((entry) => entry.user_id),
    ['user0'],
  );
  assert.equal(third.next_cursor, null);
  assert.deepEqual(
    await portal.admin.auditLog({ limit: 2, cursor: first.next_cursor }),
    second,
    'the typed client reads the same',
  );

  const timeForm = 'is not an ISO 8601 date or date-time such as 2026-03-01 or 2026-03-01T12:00:00Z';
  assert.equal(
    errorBody((await portal.get('/audit_log', { since: 'yesterday' })).text),
    `invalid value for "since": "yesterday" ${timeForm}`,
  );
  assert.equal(
    errorBody((await portal.get('/audit_log', { until: '2026-13-01' })).text),
    `invalid value for "until": "2026-13-01" ${timeForm}`,
  );
  // A time past the year 9999 or before 0000 (an offset can take it there) has no ATOM form:
  // written as `+010000-…` it sorted before every entry, and `since` found them all. A day that
  // does not exist was read as one of the next month.
  for (const since of [
    '9999-12-31T23:59:59-23:59',
    '0000-01-01T00:00:00+00:01',
    '2026-02-30',
    '2026-02-29T12:00:00Z',
  ]) {
    assert.equal(
      errorBody((await portal.get('/audit_log', { since })).text),
      `invalid value for "since": ${JSON.stringify(since)} ${timeForm}`,
    );
  }
  assert.equal((await portal.get('/audit_log', { since: '9999-12-31T23:59:59Z', until: '0000-01-01' })).status, 200);
  for (const [query, name] of [
    [{ limit: '0' }, 'limit'],
    [{ limit: '1001' }, 'limit'],
    [{ cursor: 'x' }, 'cursor'],
    [{ key: 'a b' }, 'key'],
  ] as const) {
    const response = await portal.get('/audit_log', query);
    assert.equal(response.status, 400, JSON.stringify(query));
    assert.equal(errorBody(response.text), `invalid value for "${name}"`);
  }
});

test('entries older than auditLogRetention are pruned by the daily housekeeping, also by the first pass of a portal that was stopped', async (t) => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-audit-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const clock = new ManualClock('2026-01-10T12:00:00Z');
  const portal = await startTestPortal({ dataDir, clock, config: { auditLogRetention: 'P1M' } });
  // The start-up pass runs its daily housekeeping now, not after the clock moved (on a slow
  // machine it would prune first, and the call below would find nothing left to prune).
  await portal.reconcile();
  for (const userId of ['old', 'older'])
    assert.equal((await portal.post('/create', { user_id: userId, profile_id: 'employees' })).status, 200);
  clock.advance(20 * DAY);
  assert.equal((await portal.post('/create', { user_id: 'recent', profile_id: 'employees' })).status, 200);

  clock.advance(15 * DAY); // 2026-02-14: the first two are older than a month, the third is not
  assert.equal((await runHousekeepingIfDue(portal.portal.ctx))?.auditEntriesDeleted, 2);
  assert.deepEqual(
    (await auditLog(portal)).map((row) => [row.call, row.userId, row.parameters['audit_log'] ?? null]),
    [
      ['housekeeping', null, '2'],
      ['create', 'recent', null],
    ],
    'the housekeeping says in a row of its own what it deleted',
  );
  assert.equal(
    (await pruneAuditLog(portal.portal.ctx.db, '2026-01-30T12:00:00+00:00')).removed,
    0,
    'the storage function prunes before the given time',
  );
  await portal.close();

  // A portal that starts prunes what has outlived the retention meanwhile.
  clock.advance(30 * DAY);
  const restarted = await startTestPortal({ dataDir, clock, config: { auditLogRetention: 'P1M' } });
  t.after(() => restarted.close());
  // What is left is the new pass's own row: it deleted the creation and the first pass's row.
  const onlyTheNewRow = async () => (await auditLog(restarted)).map((row) => [row.call, row.parameters['audit_log']]);
  for (let attempt = 0; attempt < 50 && (await onlyTheNewRow()).length !== 1; attempt++)
    await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(await onlyTheNewRow(), [['housekeeping', '2']]);
});
