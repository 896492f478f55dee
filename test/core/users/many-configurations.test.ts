// Nothing bounds how many configurations one user holds (a kiosk account, a shared MDM user):
// disabling or destroying a user with more of them than a JavaScript call takes arguments must
// still revoke every one. Runs on SQLite and, in the PostgreSQL pass, on PostgreSQL.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { latestRevision } from '../../../src/storage/revisions.js';
import { clientAddressesAt } from '../../../src/wireguard/address-pool.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

/** More than a call's arguments may be (about 125,000 here). */
const CONFIGURATIONS = 150_000;
const RANGE_FOUR = '10.64.0.0/14';
const RANGE_SIX = 'fd44::/64';
const NOW = new Date().toISOString().replace(/\.\d+Z$/, '+00:00');
const LATER = new Date(Date.now() + 365 * 86_400_000).toISOString().replace(/\.\d+Z$/, '+00:00');

function publicKeyOf(index: number): string {
  const key = Buffer.alloc(32);
  key.writeUInt32BE(index + 1, 0);
  return key.toString('base64');
}

/** The configurations, as creates would have stored them, written in bulk (creating them one by one would take minutes). */
async function storeConfigurations(portal: TestPortal, userId: string): Promise<void> {
  const { db } = portal.portal.ctx;
  await db
    .insertInto('users')
    .values({ user_id: userId, created_at: NOW, last_seen: NOW, auth_data: null, is_disabled: 0 })
    .execute();
  // As the last change before would have stored them.
  const stored = await latestRevision(db);
  for (let start = 0; start < CONFIGURATIONS; start += 2_000) {
    const indexes = Array.from({ length: Math.min(2_000, CONFIGURATIONS - start) }, (_, offset) => start + offset);
    await db
      .insertInto('wg_peers')
      .values(
        indexes.map((index) => {
          const { ipFour, ipSix } = clientAddressesAt(RANGE_FOUR, RANGE_SIX, index);
          return {
            public_key: publicKeyOf(index),
            user_id: userId,
            profile_id: 'employees',
            node_number: 0,
            display_name: `kiosk ${index}`,
            ip_four: ipFour,
            ip_six: ipSix,
            pool_index: index,
            created_at: NOW,
            expires_at: LATER,
            auth_key: null,
            expiry_warned: 0,
            revision: stored,
          };
        }),
      )
      .execute();
  }
}

async function startPortal(t: { after: (fn: () => Promise<void>) => void }): Promise<TestPortal> {
  const portal = await startTestPortal({
    config: {
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          wRangeFour: RANGE_FOUR,
          wRangeSix: RANGE_SIX,
          dnsServerList: ['9.9.9.9'],
          nodeUrl: 'http://127.0.0.1:9/',
        },
      ],
    },
  });
  t.after(() => portal.close());
  return portal;
}

async function peersOf(portal: TestPortal, userId: string): Promise<number> {
  const row = await portal.portal.ctx.db
    .selectFrom('wg_peers')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

test('a user holding 150,000 configurations is disabled: the user is refused and every configuration leaves the listing', async (t) => {
  const portal = await startPortal(t);
  await storeConfigurations(portal, 'kiosk');
  const before = await latestRevision(portal.portal.ctx.db);

  await portal.admin.disableUser('kiosk');

  assert.deepEqual(await portal.admin.disabledUsers(), ['kiosk']);
  // Every one got its removal's revision, newer than the one it was stored with.
  const unstamped = await portal.portal.ctx.db
    .selectFrom('wg_peers')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('user_id', '=', 'kiosk')
    .where('revision', '<=', before)
    .executeTakeFirstOrThrow();
  assert.equal(Number(unstamped.count), 0);
  assert.equal(await peersOf(portal, 'kiosk'), CONFIGURATIONS, 'disabled, not deleted');
  const listed = await portal.get('/connection_list', { profile_id: 'employees' });
  assert.equal(listed.status, 200);
  assert.deepEqual(listed.json(), { connection_list: { employees: [] } });
});

test('a user holding 150,000 configurations is destroyed: every configuration is deleted and its address given back', async (t) => {
  const portal = await startPortal(t);
  await storeConfigurations(portal, 'kiosk');

  await portal.admin.destroy('kiosk');

  assert.equal(await peersOf(portal, 'kiosk'), 0);
  const free = await portal.portal.ctx.db
    .selectFrom('ip_pool_free')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow();
  assert.equal(Number(free.count), CONFIGURATIONS);
});
