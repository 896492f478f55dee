// A user holding many WireGuard configurations, written in bulk as creates would have stored
// them (creating 150,000 one by one would take minutes), on a test portal whose one profile's
// range holds them: for the tests of revocations at that size.
import { latestRevision } from '../../src/storage/revisions.js';
import { clientAddressesAt } from '../../src/wireguard/address-pool.js';
import { startTestPortal, type TestPortal } from './test-portal.js';

const RANGE_FOUR = '10.64.0.0/14';
const RANGE_SIX = 'fd44::/64';
const NOW = new Date().toISOString().replace(/\.\d+Z$/, '+00:00');
const LATER = new Date(Date.now() + 365 * 86_400_000).toISOString().replace(/\.\d+Z$/, '+00:00');

/** The public key of the configuration at `index`. */
export function publicKeyOf(index: number): string {
  const key = Buffer.alloc(32);
  key.writeUInt32BE(index + 1, 0);
  return key.toString('base64');
}

/** Makes `userId` with `count` configurations, at pool indexes 0 to count - 1. */
export async function storeConfigurations(portal: TestPortal, userId: string, count: number): Promise<void> {
  const { db } = portal.portal.ctx;
  await db
    .insertInto('users')
    .values({ user_id: userId, created_at: NOW, last_seen: NOW, auth_data: null, is_disabled: 0 })
    .execute();
  // As the last change before would have stored them.
  const stored = await latestRevision(db);
  for (let start = 0; start < count; start += 2_000) {
    const indexes = Array.from({ length: Math.min(2_000, count - start) }, (_, offset) => start + offset);
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

/** A test portal whose one profile's range holds 250,000 configurations (its node never answers). */
export async function startRoomyPortal(t: { after: (fn: () => Promise<void>) => void }): Promise<TestPortal> {
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
