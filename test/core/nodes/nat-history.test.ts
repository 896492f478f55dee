// The NAT mapping history is recorded from what the nodes answer to /i/node: a stand-in node
// answers it here (the agent's own report of its NAT is another part of the work, tested with
// the agent), read by two real portal instances on one database, through the portal's node
// client, its watch and its reconcile pass. Each change is recorded once, from the node's own
// date, and announced once (`node.nat_changed`, here to a webhook receiver). A date the portal
// cannot vouch for (far in the future, or recorded while its own clock ran ahead) never hides a
// newer mapping from attribution.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { recordNodeNat } from '../../../src/core/nodes/index.js';
import type { NatMode } from '../../../src/protocol/vpn-daemon.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { DeterministicNat } from '../../../src/net/deterministic-nat.js';
import { asProfileId, asUserId } from '../../../src/shared/ids.js';
import { openConnection } from '../../../src/storage/connection-log.js';
import { natMappingHistory, natMappingsInForce, pruneNatMappings } from '../../../src/storage/nat-mappings.js';
import { employeesProfile, ManualClock, twoProfiles } from '../../support/admin-keys.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { until } from '../../support/until.js';
import { WebhookReceiver } from '../../support/webhook-receiver.js';

/** A node that answers only what the portal asks of a node without peers; `nat` is what its /i/node says. */
class StandInNode {
  nat: NatMode | null = null;
  readonly #server: Server;
  readonly url: string;

  private constructor(server: Server) {
    this.#server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  static async start(): Promise<StandInNode> {
    let node: StandInNode | null = null;
    const server = createServer((request, response) => {
      const path = (request.url ?? '').split('?')[0];
      const body =
        path === '/i/node'
          ? {
              rel_load_average: [1],
              load_average: [0.01],
              cpu_count: 1,
              node_uptime: 1000,
              maintenance_mode: false,
              w_peer_count: 0,
              o_client_count: 0,
              instance_id: 'stand-in',
              ...(node?.nat === null || node === null ? {} : { nat: node.nat }),
              v: 'stand-in',
            }
          : path === '/w/peer_list'
            ? { peer_list: [] }
            : null;
      response
        .writeHead(body === null ? 404 : 200, { 'content-type': 'application/json' })
        .end(JSON.stringify(body ?? {}));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    node = new StandInNode(server);
    return node;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

const NODE = asNodeNumber(0);
const deterministic = (appliedAt: string, portsPerClient: number): Extract<NatMode, { mode: 'deterministic' }> => ({
  mode: 'deterministic',
  applied_at: appliedAt,
  ranges: ['10.44.0.0/24'],
  public_addresses: ['192.0.2.10'],
  ports_per_client: portsPerClient,
});

async function history(portal: TestPortal): Promise<[string, string, number | null][]> {
  return (await natMappingHistory(portal.portal.ctx.db, NODE)).map((entry) => [
    entry.appliedAt,
    entry.mapping.mode,
    entry.mapping.mode === 'deterministic' ? entry.mapping.settings.portsPerClient : null,
  ]);
}

test('two portal instances reading a node’s /i/node record each change of its NAT once, from the node’s date, and announce it once', async (t) => {
  const node = await StandInNode.start();
  t.after(() => node.close());
  const receiver = await WebhookReceiver.start();
  t.after(() => receiver.close());
  const config = {
    ProfileList: [{ ...employeesProfile, nodeUrl: node.url }],
    webhooks: { allowPrivateTargets: ['127.0.0.0/8'] },
  };
  // The portal first hears the node at 07:00; the changes it reports come after, by 13:00.
  const clock = new ManualClock('2026-03-01T07:00:00Z');
  const first = await startTestPortal({ config, clock });
  t.after(() => first.close());
  const second = await startTestPortal({ config, database: first.database, clock });
  t.after(() => second.close());
  const subscribed = await first.post('/create_webhook', { url: receiver.url, event_types: 'node.nat_changed' });
  assert.equal(subscribed.status, 200, subscribed.text);
  const bothRead = async () => {
    await first.reconcile();
    await second.reconcile();
  };

  await bothRead();
  assert.deepEqual(await history(first), [], 'a node that never reported NAT has no history');
  clock.advance(6 * 3600_000);

  node.nat = { mode: 'masquerade', applied_at: '2026-03-01T08:00:00.250Z' };
  await bothRead();
  node.nat = deterministic('2026-03-01T10:00:00Z', 250);
  await bothRead();
  await bothRead();
  node.nat = deterministic('2026-03-01T11:00:00Z', 250);
  await bothRead();
  assert.deepEqual(
    await history(first),
    [
      ['2026-03-01T08:00:00+00:00', 'masquerade', null],
      ['2026-03-01T10:00:00+00:00', 'deterministic', 250],
    ],
    'the same mapping applied again (an agent restart) is no change',
  );

  node.nat = deterministic('2026-03-01T12:00:00Z', 200);
  await bothRead();
  assert.deepEqual(
    (await history(second)).at(-1),
    ['2026-03-01T12:00:00+00:00', 'deterministic', 200],
    'new settings are a change; the old entries stay',
  );
  node.nat = null;
  await bothRead();
  const entries = await history(first);
  assert.equal(entries.length, 4, JSON.stringify(entries));
  assert.deepEqual(entries.at(-1)?.slice(1), ['none', null], 'a node that stopped translating');

  const deliveries = await first.portal.ctx.db.selectFrom('webhook_deliveries').select('delivery_id').execute();
  assert.equal(deliveries.length, 4, 'one delivery per change, whichever instance recorded it');
  // Delivery is the worker's, in the background: a loaded machine may take a while, and an
  // attempt that timed out or could not be recorded is tried again after a delay or a lease in
  // the portals' time, which stands still here: it moves a minute every 5 s of waiting.
  let polls = 0;
  await until(
    'the receiver heard every change',
    async () => {
      if (++polls % 50 === 0) clock.advance(60_000);
      return receiver.received.length >= 4;
    },
    120_000,
  );
  const masquerade = receiver.received
    .map((webhook) => webhook.payload)
    .find((payload) => payload.type === 'node.nat_changed' && payload.data.mode === 'masquerade');
  assert.deepEqual(masquerade?.data, {
    node_number: 0,
    applied_at: '2026-03-01T08:00:00+00:00',
    mode: 'masquerade',
    ranges: null,
    public_addresses: null,
    ports_per_client: null,
  });
});

test('a deterministic NAT whose settings do not compute is not recorded, and a node’s clock gone back does not rewrite history', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  assert.equal(
    await recordNodeNat(ctx, NODE, { ...deterministic('2026-03-01T10:00:00Z', 64), ranges: ['10.0.0.0/8'] }),
    false,
    '16 million clients on one address',
  );
  assert.equal(await recordNodeNat(ctx, NODE, deterministic('2026-03-01T10:00:00Z', 250)), true);
  assert.equal(await recordNodeNat(ctx, NODE, deterministic('2026-03-01T09:00:00Z', 200)), true);
  assert.deepEqual(
    await history(portal),
    [
      ['2026-03-01T10:00:00+00:00', 'deterministic', 250],
      ['2026-03-01T10:00:01+00:00', 'deterministic', 200],
    ],
    'the change is recorded, from the second after the last one: the mapping of 10:00 stays in force from then',
  );
});

test('a node reporting a deterministic NAT for ranges that are not its configured client ranges is not recorded', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  // Node 0's client ranges are 10.44.0.0/24 (employees) and 10.45.0.0/24 (guests).
  assert.equal(
    await recordNodeNat(ctx, NODE, { ...deterministic('2026-03-01T10:00:00Z', 250), ranges: ['10.46.0.0/24'] }),
    false,
    'another node’s range',
  );
  assert.equal(
    await recordNodeNat(ctx, NODE, { ...deterministic('2026-03-01T10:00:00Z', 100), ranges: ['10.44.0.0/23'] }),
    false,
    'a range wider than any of its own',
  );
  assert.equal(
    await recordNodeNat(ctx, asNodeNumber(1), deterministic('2026-03-01T10:00:00Z', 250)),
    false,
    'a node the configuration gives no clients',
  );
  assert.deepEqual(await history(portal), []);
  assert.equal(
    await recordNodeNat(ctx, NODE, {
      ...deterministic('2026-03-01T10:00:00Z', 100),
      ranges: ['10.44.0.0/24', '10.45.0.0/25'],
    }),
    true,
    'its own ranges, or parts of them (as OpenVPN processes split theirs), are recorded',
  );
});

test('a node’s date of a change is kept between its last recorded change (or the portal’s first contact) and the portal’s now', async (t) => {
  const clock = new ManualClock('2026-03-01T12:00:00Z');
  const portal = await startTestPortal({ clock });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  const firstContact = new Date('2026-03-01T11:00:00Z');
  assert.equal(await recordNodeNat(ctx, NODE, deterministic('2000-01-01T00:00:00Z', 250), firstContact), true);
  assert.deepEqual(
    await history(portal),
    [['2026-03-01T11:00:00+00:00', 'deterministic', 250]],
    'a first report dated before the portal ever heard the node does not rewrite the past',
  );

  clock.advance(3600_000);
  assert.equal(await recordNodeNat(ctx, NODE, deterministic('2099-01-01T00:00:00Z', 200), firstContact), true);
  assert.deepEqual(
    (await history(portal)).at(-1),
    ['2026-03-01T13:00:00+00:00', 'deterministic', 200],
    'a future date is now',
  );

  clock.advance(60_000);
  assert.equal(
    await recordNodeNat(ctx, NODE, { mode: 'masquerade', applied_at: '2026-03-01T13:01:00Z' }, firstContact),
    true,
    'the next real change is not refused until 2099',
  );
  assert.equal(
    await recordNodeNat(ctx, NODE, { mode: 'masquerade', applied_at: '2026-03-01T13:01:00Z' }, firstContact),
    false,
  );
  assert.equal(
    await recordNodeNat(ctx, NODE, deterministic('2026-03-01T12:30:00Z', 250), firstContact),
    true,
    'a date before the last change',
  );
  clock.advance(60_000);
  assert.equal(await recordNodeNat(ctx, NODE, null, firstContact), true);
  assert.deepEqual(await history(portal), [
    ['2026-03-01T11:00:00+00:00', 'deterministic', 250],
    ['2026-03-01T13:00:00+00:00', 'deterministic', 200],
    ['2026-03-01T13:01:00+00:00', 'masquerade', null],
    ['2026-03-01T13:01:01+00:00', 'deterministic', 250],
    ['2026-03-01T13:02:00+00:00', 'none', null],
  ]);
});

test('the retention of the history keeps the mapping in force at its limit, and everything while a legal hold is in force', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  // The start-up pass's housekeeping prunes by today's date: done before the history is written.
  await portal.reconcile();
  const ctx = portal.portal.ctx;
  for (const [appliedAt, ports] of [
    ['2026-01-01T00:00:00Z', 250],
    ['2026-02-01T00:00:00Z', 200],
    ['2026-03-01T00:00:00Z', 250],
  ] as const)
    assert.equal(await recordNodeNat(ctx, NODE, deterministic(appliedAt, ports)), true);
  const limit = '2026-02-15T00:00:00+00:00';
  assert.deepEqual(await pruneNatMappings(ctx.db, limit, ['alice']), { removed: 0, held: 1 }, 'a hold keeps all');
  assert.equal((await history(portal)).length, 3);
  assert.deepEqual(await pruneNatMappings(ctx.db, limit, []), { removed: 1, held: 0 });
  assert.deepEqual(
    (await history(portal)).map(([appliedAt]) => appliedAt),
    ['2026-02-01T00:00:00+00:00', '2026-03-01T00:00:00+00:00'],
    'the mapping in force on 02-15 stays: sessions of that day are still kept',
  );
});

test('a mapping a node dates past year 9999 is recorded from now, and attribution after the next change reads the newer mapping', async (t) => {
  const clock = new ManualClock('2026-03-01T12:00:00Z');
  const portal = await startTestPortal({ clock });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  await openConnection(ctx.db, {
    userId: asUserId('alice'),
    profileId: asProfileId('employees'),
    vpnProto: 'wireguard',
    connectionId: 'alice-key',
    nodeNumber: NODE,
    ipFour: '10.44.0.7',
    ipSix: 'fd44::7',
    originatingIp: '198.51.100.1',
    connectedAt: new Date('2026-03-01T11:00:00Z'),
  });
  assert.equal(await recordNodeNat(ctx, NODE, deterministic('+275760-09-13T00:00:00Z', 250)), true);
  clock.advance(3600_000);
  const newer = deterministic('2026-03-01T12:30:00Z', 100);
  assert.equal(await recordNodeNat(ctx, NODE, newer), true, 'the next change is recorded');
  assert.deepEqual(await history(portal), [
    ['2026-03-01T12:00:00+00:00', 'deterministic', 250],
    ['2026-03-01T12:30:00+00:00', 'deterministic', 100],
  ]);

  const nat = new DeterministicNat({
    ranges: newer.ranges,
    publicAddresses: newer.public_addresses,
    portsPerClient: newer.ports_per_client,
  });
  const port = nat.blockOf('10.44.0.7')?.firstPort ?? 0;
  const answer = await portal.admin.attribution({
    ip: '192.0.2.10',
    port,
    at: '2026-03-01T12:45:00+00:00',
    reason: 'abuse report 17',
  });
  assert.equal(answer.translation?.mapping_applied_at, '2026-03-01T12:30:00+00:00');
  assert.equal(answer.translation?.client_ip, '10.44.0.7');
  assert.deepEqual(
    answer.sessions.map((session) => session.user_id),
    ['alice'],
  );
});

test('changes recorded while the portal’s clock ran ahead are moved back when the next change comes, so it is in force from then', async (t) => {
  const clock = new ManualClock('2027-01-01T00:00:00Z');
  const portal = await startTestPortal({ clock });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  assert.equal(await recordNodeNat(ctx, NODE, deterministic('2027-01-01T00:00:00Z', 250)), true);
  assert.equal(await recordNodeNat(ctx, NODE, { mode: 'masquerade', applied_at: '2027-01-01T00:00:00Z' }), true);
  // The clock is put right: ten months back.
  clock.advance(Date.parse('2026-03-01T13:00:00Z') - Date.parse('2027-01-01T00:00:00Z'));
  assert.equal(await recordNodeNat(ctx, NODE, deterministic('2026-03-01T12:30:00Z', 100)), true);
  assert.deepEqual(
    await history(portal),
    [
      ['2026-03-01T13:00:00+00:00', 'deterministic', 250],
      ['2026-03-01T13:00:01+00:00', 'masquerade', null],
      ['2026-03-01T13:00:02+00:00', 'deterministic', 100],
    ],
    'the order stays; no date is months ahead',
  );
  const inForce = await natMappingsInForce(ctx.db, '2026-03-01T13:30:00+00:00');
  assert.deepEqual(
    inForce.map((entry) => [entry.appliedAt, entry.mapping.mode]),
    [['2026-03-01T13:00:02+00:00', 'deterministic']],
    'the newest change is the one in force, not one dated next January',
  );
});
