// The listing of active WireGuard configurations is read from the database in pages: joined,
// the pages are the whole listing, oldest first and in connection id order within a second,
// each configuration once, without disabled users, expired configurations or other profiles.
// Runs on SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { activeConnectionsJsonPages, nextPeerExpiry, peersWantedOnNode } from '../../src/storage/wg-peers.js';
import { asNodeNumber, type ProfileId } from '../../src/shared/ids.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

const NOW = '2026-11-25T12:00:00+00:00';
const employees = 'employees' as ProfileId;
const guests = 'guests' as ProfileId;

interface Row {
  readonly key: string;
  readonly user: string;
  readonly profile: ProfileId;
  readonly created: string;
  readonly expires: string;
}

async function store(portal: TestPortal, rows: readonly Row[], disabledUsers: readonly string[]): Promise<void> {
  const { db } = portal.portal.ctx;
  const users = [...new Set(rows.map((row) => row.user))];
  await db
    .insertInto('users')
    .values(
      users.map((user) => ({
        user_id: user,
        created_at: NOW,
        last_seen: NOW,
        auth_data: null,
        is_disabled: disabledUsers.includes(user) ? 1 : 0,
      })),
    )
    .execute();
  await db
    .insertInto('wg_peers')
    .values(
      rows.map((row, index) => ({
        public_key: row.key,
        user_id: row.user,
        profile_id: row.profile,
        node_number: 0,
        display_name: `device ${row.key}`,
        ip_four: `10.99.${Math.floor(index / 250)}.${(index % 250) + 2}`,
        ip_six: `fd99::${index + 2}`,
        pool_index: 10_000 + index,
        created_at: row.created,
        expires_at: row.expires,
        auth_key: null,
        expiry_warned: 1,
        revision: 1,
      })),
    )
    .execute();
}

async function pages(portal: TestPortal, profileId: ProfileId, pageSize: number): Promise<string[][]> {
  const read: string[][] = [];
  for await (const page of activeConnectionsJsonPages(portal.portal.ctx.db, profileId, NOW, pageSize)) {
    read.push((JSON.parse(page) as { connection_id: string }[]).map((connection) => connection.connection_id));
  }
  return read;
}

test('pages of the listing join into the whole listing in its order, each configuration once', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  // Far after NOW and after the real clock too: the portal's expiry sweep runs on the real clock.
  const later = '2099-12-25T12:00:00+00:00';
  // Several configurations share a second: within it the connection id decides, across pages too.
  const active: Row[] = [
    { key: 'k-a', user: 'ann', profile: employees, created: '2026-11-20T08:00:00+00:00', expires: later },
    { key: 'k-b', user: 'bob', profile: employees, created: '2026-11-20T08:00:01+00:00', expires: later },
    { key: 'k-c', user: 'ann', profile: employees, created: '2026-11-20T08:00:01+00:00', expires: later },
    { key: 'k-d', user: 'cid', profile: employees, created: '2026-11-20T08:00:01+00:00', expires: later },
    { key: 'k-e', user: 'bob', profile: employees, created: '2026-11-20T08:00:01+00:00', expires: later },
    { key: 'k-f', user: 'ann', profile: employees, created: '2026-11-21T09:00:00+00:00', expires: later },
    { key: 'k-g', user: 'cid', profile: employees, created: '2026-11-22T10:00:00+00:00', expires: later },
  ];
  const leftOut: Row[] = [
    { key: 'k-disabled', user: 'dan', profile: employees, created: '2026-11-20T08:00:01+00:00', expires: later },
    { key: 'k-expired', user: 'ann', profile: employees, created: '2026-11-20T08:00:01+00:00', expires: NOW },
    { key: 'k-guest', user: 'bob', profile: guests, created: '2026-11-20T08:00:01+00:00', expires: later },
  ];
  // Stored out of order: the order comes from the query.
  await store(portal, [...active].reverse().concat(leftOut), ['dan']);

  assert.deepEqual(await pages(portal, employees, 3), [['k-a', 'k-b', 'k-c'], ['k-d', 'k-e', 'k-f'], ['k-g']]);
  // A listing that fills its last page exactly ends there, without an empty page.
  assert.deepEqual(await pages(portal, employees, 7), [['k-a', 'k-b', 'k-c', 'k-d', 'k-e', 'k-f', 'k-g']]);
  assert.deepEqual(
    await pages(portal, employees, 1),
    active.map((row) => [row.key]),
  );
  assert.deepEqual(await pages(portal, guests, 3), [['k-guest']]);
  assert.deepEqual(await pages(portal, 'nobody' as ProfileId, 3), []);

  // The fields of a connection are those of specification §2.3.
  const texts: string[] = [];
  for await (const text of activeConnectionsJsonPages(portal.portal.ctx.db, guests, NOW, 3)) texts.push(text);
  assert.deepEqual(
    texts.map((text) => JSON.parse(text) as unknown),
    [
      [
        {
          user_id: 'bob',
          connection_id: 'k-guest',
          display_name: 'device k-guest',
          ip_list: ['10.99.0.11', 'fd99::11'],
          vpn_proto: 'wireguard',
          auth_key: null,
        },
      ],
    ],
  );
});

test('the next expiry of a profile is its own, even when another profile expires sooner', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const created = '2026-11-20T08:00:00+00:00';
  await store(
    portal,
    [
      { key: 'g-1', user: 'ann', profile: guests, created, expires: '2026-11-25T12:30:00+00:00' },
      { key: 'g-2', user: 'ann', profile: guests, created, expires: '2026-11-25T13:00:00+00:00' },
      { key: 'e-past', user: 'bob', profile: employees, created, expires: '2026-11-25T11:00:00+00:00' },
      { key: 'e-1', user: 'bob', profile: employees, created, expires: '2026-11-26T08:00:00+00:00' },
      { key: 'e-2', user: 'bob', profile: employees, created, expires: '2026-11-25T14:00:00+00:00' },
    ],
    [],
  );
  assert.equal(await nextPeerExpiry(portal.portal.ctx.db, employees, NOW), '2026-11-25T14:00:00+00:00');
  assert.equal(await nextPeerExpiry(portal.portal.ctx.db, guests, NOW), '2026-11-25T12:30:00+00:00');
  assert.equal(await nextPeerExpiry(portal.portal.ctx.db, guests, '2026-11-25T13:00:00+00:00'), null);
});

test('a node is wanted to hold the enabled, unexpired configurations of every profile on it, with their addresses', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const created = '2026-11-20T08:00:00+00:00';
  // Far after NOW and after the real clock too: the portal's expiry sweep runs on the real clock.
  const later = '2099-12-25T12:00:00+00:00';
  await store(
    portal,
    [
      { key: 'k-ann', user: 'ann', profile: employees, created, expires: later },
      { key: 'k-guest', user: 'bob', profile: guests, created, expires: later },
      { key: 'k-disabled', user: 'dan', profile: employees, created, expires: later },
      { key: 'k-expired', user: 'ann', profile: employees, created, expires: NOW },
    ],
    ['dan'],
  );
  const wanted = await peersWantedOnNode(portal.portal.ctx.db, { now: NOW, nodeNumber: asNodeNumber(0) });
  assert.deepEqual(
    wanted.sort((a, b) => a.publicKey.localeCompare(b.publicKey)),
    [
      { publicKey: 'k-ann', profileId: employees, ipFour: '10.99.0.2', ipSix: 'fd99::2' },
      { publicKey: 'k-guest', profileId: guests, ipFour: '10.99.0.3', ipSix: 'fd99::3' },
    ],
  );
  assert.deepEqual(await peersWantedOnNode(portal.portal.ctx.db, { now: NOW, nodeNumber: asNodeNumber(1) }), []);
});
