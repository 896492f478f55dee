// The paged listing (src/core/listings/pages.ts) is never stale: after every step of a random
// sequence of changes (create, delete_connection, disable_user, enable_user, destroy, expiry),
// made through either of two portal instances on one database, the listings a long-lived
// instance answers, and a paged listing with pages of three, equal a listing built afresh.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { ListingPages } from '../../../src/core/listings/pages.js';
import { deleteExpiredConfigurations } from '../../../src/core/reconcile/pass.js';
import type { ProfileId, WireGuardKey } from '../../../src/shared/ids.js';
import { jsonPartsText } from '../../../src/shared/json-parts.js';
import { formatAtom } from '../../../src/shared/time.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import { ManualClock } from '../../support/admin-keys.js';
import { startTestPortal, UNREACHABLE_NODE, type TestPortal } from '../../support/test-portal.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

const config: Partial<PortalConfigFile> = {
  reconcileInterval: 'PT1H',
  supportedSessionExpiry: ['PT1H', 'PT12H', 'P1D'],
  ProfileList: [
    {
      profileId: 'staff',
      displayName: 'Staff',
      hostName: 'vpn.example.org',
      wRangeFour: '10.48.0.0/22',
      wRangeSix: 'fd48::/64',
      nodeUrl: UNREACHABLE_NODE,
    },
    {
      profileId: 'guests',
      displayName: 'Guests',
      hostName: 'vpn.example.org',
      wRangeFour: '10.49.0.0/22',
      wRangeSix: 'fd49::/64',
      nodeUrl: UNREACHABLE_NODE,
    },
  ],
};
const PROFILES = ['staff', 'guests'] as const;
const USERS = ['ann', 'bob', 'cid', 'dee', 'eve', 'fay', 'gus', 'hal'];
const STEPS = 120;

/** A small deterministic random source, so a failure can be replayed (the seed is in the message). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

test('a paged listing equals a fresh build after every step of a random sequence of changes, on either instance', async (t) => {
  const clock = new ManualClock('2026-06-01T08:00:00Z');
  const reader = await startTestPortal({ config, clock });
  t.after(() => reader.close());
  const writer = await startTestPortal({ config, clock, dataDir: reader.dataDir, database: reader.database });
  t.after(() => writer.close());
  const db = reader.portal.ctx.db;
  const small = new ListingPages(3);
  const seed = Date.now() % 1_000_000;
  const next = random(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const keys = new Map<string, { userId: string; profile: string }>();

  for (let step = 0; step < STEPS; step++) {
    const portal = next() < 0.5 ? reader : writer;
    const userId = pick(USERS);
    const roll = next();
    let done: string;
    if (roll < 0.45 || keys.size === 0) {
      const profile = pick(PROFILES);
      const response = await portal.post('/create', {
        user_id: userId,
        profile_id: profile,
        expires_in: pick(config.supportedSessionExpiry ?? []),
      });
      // A disabled user gets no configuration: also a step.
      if (response.status === 200) {
        const key = wireGuardPublicKey(parseWireGuardFile(response.text).interface.get('PrivateKey') as WireGuardKey);
        keys.set(key, { userId, profile });
      }
      done = `create ${userId} ${profile}: ${response.status}`;
    } else if (roll < 0.6) {
      const [key, owner] = pick([...keys]);
      const response = await portal.post('/delete_connection', { user_id: owner.userId, connection_id: key });
      keys.delete(key);
      done = `delete_connection ${key}: ${response.status}`;
    } else if (roll < 0.72) {
      done = `disable_user ${userId}: ${(await portal.post('/disable_user', { user_id: userId })).status}`;
    } else if (roll < 0.84) {
      done = `enable_user ${userId}: ${(await portal.post('/enable_user', { user_id: userId })).status}`;
    } else if (roll < 0.9) {
      for (const [key, owner] of keys) if (owner.userId === userId) keys.delete(key);
      done = `destroy ${userId}: ${(await portal.post('/destroy', { user_id: userId })).status}`;
    } else {
      // Time passes: some configurations expire (left in the database, or swept by a pass).
      clock.advance(Math.floor(next() * 6) * 1800_000 + 1000);
      if (next() < 0.5) await deleteExpiredConfigurations(portal.portal.ctx);
      done = `expiry to ${formatAtom(clock.now())}`;
    }
    const now = formatAtom(clock.now());
    for (const profile of PROFILES) {
      const profileId = profile as ProfileId;
      const fresh = await new ListingPages().read(db, profileId, now);
      const expected = {
        connections: JSON.parse(jsonPartsText(fresh.connections)),
        users: JSON.parse(jsonPartsText(fresh.userIds())),
      };
      const paged = await small.read(db, profileId, now);
      const where = `seed ${seed}, step ${step} (${done}), profile ${profile}`;
      assert.deepEqual(JSON.parse(jsonPartsText(paged.connections)), expected.connections, `pages of three: ${where}`);
      assert.deepEqual(JSON.parse(jsonPartsText(paged.userIds())), expected.users, `pages of three, users: ${where}`);
      assert.deepEqual(
        await listed(reader, profile, 'connection_list'),
        expected.connections,
        `connection_list: ${where}`,
      );
      assert.deepEqual(await listed(reader, profile, 'connected_users'), expected.users, `connected_users: ${where}`);
    }
  }
  assert.ok(small.pagesBuilt > 0);
});

async function listed(
  portal: TestPortal,
  profile: string,
  listing: 'connection_list' | 'connected_users',
): Promise<unknown> {
  const response = await portal.get(`/${listing}`, { show_all: 'on' });
  assert.equal(response.status, 200, response.text);
  return (response.json() as Record<string, Record<string, unknown>>)[listing]?.[profile];
}

test('a page is built again only when a change touched it', async (t) => {
  const portal = await startTestPortal({ config });
  t.after(() => portal.close());
  const keys: string[] = [];
  for (const userId of USERS) {
    const response = await portal.post('/create', { user_id: userId, profile_id: 'staff' });
    assert.equal(response.status, 200, response.text);
    keys.push(wireGuardPublicKey(parseWireGuardFile(response.text).interface.get('PrivateKey') as WireGuardKey));
  }
  const pages = new ListingPages(2);
  const db = portal.portal.ctx.db;
  const now = () => formatAtom(portal.portal.ctx.clock.now());
  await pages.read(db, 'staff' as ProfileId, now());
  const full = pages.pagesBuilt;
  assert.ok(full >= 4, `${USERS.length} configurations in pages of two: ${full}`);
  await pages.read(db, 'staff' as ProfileId, now());
  assert.equal(pages.pagesBuilt, full, 'nothing changed: nothing built');
  assert.equal((await portal.post('/disable_user', { user_id: 'cid' })).status, 204);
  const listing = await pages.read(db, 'staff' as ProfileId, now());
  assert.equal(pages.pagesBuilt, full + 1, 'one page holds cid');
  assert.ok(!jsonPartsText(listing.userIds()).includes('"cid"'));
});
