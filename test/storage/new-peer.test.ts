// A create's last statement takes the address and ends with the change's closing writes: the
// webhook outbox's deliveries among them, whose number it tells the outbox (which wakes its
// worker only then), at a pool's very first address as at any other. On SQLite (the steps one by
// one) and, in the PostgreSQL pass, on PostgreSQL (one statement).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asNodeNumber, asProfileId, asUserId, asWireGuardKey } from '../../src/shared/ids.js';
import { timeOrderedId } from '../../src/shared/time-ordered-id.js';
import type { ClosingWrite } from '../../src/storage/closing-writes.js';
import { insertPeerAtFreeAddress } from '../../src/storage/new-peer.js';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';
import { startTestPortal } from '../support/test-portal.js';
import { subscribe } from '../support/webhook-subscriptions.js';

const AT = '2026-11-29T12:00:00+00:00';
const POOL = {
  profileId: asProfileId('employees'),
  nodeNumber: asNodeNumber(0),
  rangeFour: '10.77.0.0/24',
  rangeSix: 'fd77::/64',
};

test('a create writes the deliveries of its events with its configuration and tells the outbox how many, at the first address of a pool and after', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const { db } = portal.portal.ctx;
  for (const [webhookId, eventTypes] of [
    ['every', ['*']],
    ['created', ['configuration.created']],
    ['disabled', ['user.disabled']],
  ] as const) {
    await subscribe(db, webhookId, eventTypes, AT);
  }
  await db.insertInto('users').values({ user_id: 'alice', created_at: AT, last_seen: AT, auth_data: null }).execute();

  const told: number[] = [];
  const addresses: string[] = [];
  for (let create = 0; create < 2; create++) {
    const eventId = timeOrderedId();
    const writes: ClosingWrite[] = [
      {
        kind: 'webhook-deliveries',
        events: [
          { idSource: timeOrderedId(), eventId, eventType: 'configuration.created', payload: '{}', createdAt: AT },
        ],
        written: (deliveries) => told.push(deliveries),
      },
      { kind: 'listing-generation' },
    ];
    const taken = await db.transaction().execute((trx) =>
      insertPeerAtFreeAddress(
        trx,
        POOL,
        {
          publicKey: asWireGuardKey(generateWireGuardKeyPair().publicKey),
          userId: asUserId('alice'),
          profileId: POOL.profileId,
          nodeNumber: POOL.nodeNumber,
          displayName: `create ${create}`,
          createdAt: AT,
          // Far ahead: an expired configuration is swept away.
          expiresAt: '2099-11-29T12:00:00+00:00',
          authKey: null,
          expiryWarned: false,
          deviceId: null,
        },
        writes,
      ),
    );
    addresses.push(taken?.peer?.ipFour ?? 'none');
    const delivered = await db
      .selectFrom('webhook_deliveries')
      .select('webhook_id')
      .where('event_id', '=', eventId)
      .execute();
    assert.deepEqual(delivered.map((row) => row.webhook_id).sort(), ['created', 'every']);
  }
  assert.deepEqual(addresses, ['10.77.0.2', '10.77.0.3']);
  assert.deepEqual(told, [2, 2], 'the outbox is told of each create’s two deliveries, once');
});
