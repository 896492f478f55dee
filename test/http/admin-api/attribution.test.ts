// GET /attribution: the node's NAT mapping history is recorded here through storage, as the
// portal records what a node reports (the agent's side reports it in /i/node; that recording is
// tested in test/core/nodes/nat-history.test.ts), and the sessions as the connection-log listener
// writes them. An abuse report's public address, port and moment answer the session that held
// the client address then, through the mapping in force then; a port outside every block, an
// address nobody held, a node that masqueraded or a second in which the client address passed
// to another user answer why not; every look-up is audited with
// its reason, and a key limited to some profiles finds only their users.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DeterministicNat, type NatSettings } from '../../../src/net/deterministic-nat.js';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { closeConnection, openConnection } from '../../../src/storage/connection-log.js';
import { recordNatMapping, type NatMapping } from '../../../src/storage/nat-mappings.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import {
  auditLog,
  bearer,
  employeesProfile,
  guestsProfile,
  makeAdminKey,
  ManualClock,
  twoProfiles,
} from '../../support/admin-keys.js';
import { handLaptopToFrank } from '../../support/device-keys.js';
import { startTestPortal, type ApiResponse, type TestPortal } from '../../support/test-portal.js';

const NODE = asNodeNumber(0);
/** Both profiles' ranges are on node 0; the mapping changes at noon. */
const MORNING: NatSettings = {
  ranges: ['10.44.0.0/24', '10.45.0.0/24'],
  publicAddresses: ['192.0.2.10', '192.0.2.11'],
  portsPerClient: 250,
};
const AFTERNOON: NatSettings = { ranges: MORNING.ranges, publicAddresses: ['192.0.2.10'], portsPerClient: 100 };
const CHANGE = '2026-03-01T12:00:00+00:00';

interface Session {
  readonly user: string;
  readonly profile?: string;
  /** Node 0 unless said. */
  readonly node?: number;
  readonly key: string;
  readonly four: string;
  readonly six: string;
  readonly from: string;
  readonly start: string;
  readonly end: string | null;
}

/** 10.44.0.7 went from alice (morning) to bob (afternoon); carol held 10.44.0.12 across the change; dave is a guest. */
const HISTORY: readonly Session[] = [
  {
    user: 'alice',
    key: 'a1',
    four: '10.44.0.7',
    six: 'fd44::7',
    from: '198.51.100.1',
    start: '2026-03-01T08:00:00Z',
    end: '2026-03-01T10:00:00Z',
  },
  {
    user: 'carol',
    key: 'c1',
    four: '10.44.0.12',
    six: 'fd44::c',
    from: '198.51.100.3',
    start: '2026-03-01T08:30:00Z',
    end: '2026-03-01T13:00:00Z',
  },
  {
    user: 'bob',
    key: 'b1',
    four: '10.44.0.7',
    six: 'fd44::7',
    from: '198.51.100.2',
    start: '2026-03-01T13:00:00Z',
    end: null,
  },
  {
    user: 'dave',
    profile: 'guests',
    key: 'd1',
    four: '10.45.0.7',
    six: 'fd45::7',
    from: '198.51.100.4',
    start: '2026-03-01T09:00:00Z',
    end: null,
  },
];

async function recordSessions(portal: TestPortal, sessions: readonly Session[]): Promise<void> {
  const db = portal.portal.ctx.db;
  for (const session of sessions) {
    await openConnection(db, {
      userId: asUserId(session.user),
      profileId: asProfileId(session.profile ?? 'employees'),
      vpnProto: 'wireguard',
      connectionId: session.key,
      nodeNumber: asNodeNumber(session.node ?? NODE),
      ipFour: session.four,
      ipSix: session.six,
      originatingIp: session.from,
      connectedAt: new Date(session.start),
    });
    if (session.end !== null)
      await closeConnection(db, {
        connectionId: session.key,
        nodeNumber: asNodeNumber(session.node ?? NODE),
        disconnectedAt: new Date(session.end),
        bytesIn: 1,
        bytesOut: 2,
      });
  }
}

async function recordMapping(portal: TestPortal, appliedAt: string, mapping: NatMapping, node = NODE): Promise<void> {
  const db = portal.portal.ctx.db;
  const recorded = await db
    .transaction()
    .execute((trx) => recordNatMapping(trx, { nodeNumber: node, appliedAt, mapping }, appliedAt));
  assert.notEqual(recorded, null, `the mapping of ${appliedAt} is recorded`);
}

async function startWithHistory(config = twoProfiles): Promise<TestPortal> {
  const portal = await startTestPortal({ config, clock: new ManualClock() });
  await recordSessions(portal, HISTORY);
  await recordMapping(portal, '2026-03-01T00:00:00+00:00', { mode: 'deterministic', settings: MORNING });
  await recordMapping(portal, CHANGE, { mode: 'deterministic', settings: AFTERNOON });
  return portal;
}

/** A port of the client's block under these settings (its first one plus `offset`). */
function portOf(settings: NatSettings, client: string, offset = 0): { ip: string; port: string } {
  const block = new DeterministicNat(settings).blockOf(client);
  assert.ok(block !== null, client);
  return { ip: block.publicAddress, port: String(block.firstPort + offset) };
}

interface Answer {
  at: string;
  translation: { node_number: number; client_ip: string; mapping_applied_at: string; port: number } | null;
  sessions: { user_id: string; connection_id: string; device_id: string | null; ip_four: string }[];
}

async function attribute(
  portal: TestPortal,
  query: Record<string, string>,
  key?: string,
): Promise<{ response: ApiResponse; answer: Answer }> {
  const response = await portal.get(
    '/attribution',
    { reason: 'CSIRT ticket 4711', ...query },
    key === undefined ? undefined : bearer(key),
  );
  return { response, answer: response.json() as Answer };
}

async function whoHad(portal: TestPortal, query: Record<string, string>, key?: string): Promise<string[]> {
  const { response, answer } = await attribute(portal, query, key);
  assert.equal(response.status, 200, response.text);
  return answer.sessions.map((session) => session.user_id);
}

test('a public address, port and moment name the session through the mapping in force at that moment', async (t) => {
  const portal = await startWithHistory();
  t.after(() => portal.close());

  const morning = await attribute(portal, { ...portOf(MORNING, '10.44.0.7', 17), at: '2026-03-01T09:00:00Z' });
  assert.equal(morning.response.status, 200, morning.response.text);
  assert.deepEqual(
    [morning.answer.translation?.client_ip, morning.answer.translation?.mapping_applied_at],
    ['10.44.0.7', '2026-03-01T00:00:00+00:00'],
    'the morning mapping names the client',
  );
  assert.deepEqual(
    morning.answer.sessions.map((session) => [session.user_id, session.connection_id, session.ip_four]),
    [['alice', 'a1', '10.44.0.7']],
  );
  assert.deepEqual(
    await whoHad(portal, { ...portOf(AFTERNOON, '10.44.0.7', 99), at: '2026-03-01T14:02:00+01:00' }),
    ['bob'],
    'the afternoon mapping (the offset converted to UTC: 13:02)',
  );
  assert.deepEqual(
    await whoHad(portal, { ...portOf(MORNING, '10.44.0.12'), at: '2026-03-01T11:59:59Z' }),
    ['carol'],
    'the last second before the change reads the old mapping',
  );
  assert.deepEqual(
    await whoHad(portal, { ...portOf(AFTERNOON, '10.44.0.12'), at: '2026-03-01T12:00:00Z' }),
    ['carol'],
    'from the second of the change, the new one',
  );
  const oldPortLater = await attribute(portal, { ...portOf(MORNING, '10.44.0.12'), at: '2026-03-01T12:30:00Z' });
  assert.equal(oldPortLater.response.status, 404, 'carol’s morning port names someone else in the afternoon');
  assert.match(oldPortLater.response.text, /no session held 10\.44\.0\.\d+ on node 0 at 2026-03-01T12:30:00\+00:00/);
  assert.deepEqual(
    await whoHad(portal, { ...portOf(MORNING, '10.45.0.7'), at: '2026-03-01T09:00:00Z' }),
    ['dave'],
    'the second public address of the morning mapping',
  );
});

test('after a user is destroyed and the address goes to another user, each moment answers its own user', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());
  await recordMapping(portal, '2026-03-01T00:00:00+00:00', { mode: 'deterministic', settings: AFTERNOON });
  const created = await portal.post('/create', { user_id: 'erin', profile_id: 'employees' });
  assert.equal(created.status, 200, created.text);
  const [configuration] = (await portal.admin.userConfigurationList('erin')).map((entry) => entry.connection_id);
  assert.ok(configuration !== undefined);
  await recordSessions(portal, [
    {
      user: 'erin',
      key: configuration,
      four: '10.44.0.20',
      six: 'fd44::14',
      from: '198.51.100.5',
      start: '2026-03-01T08:00:00Z',
      end: '2026-03-01T09:00:00Z',
    },
  ]);
  const before = await attribute(portal, { ...portOf(AFTERNOON, '10.44.0.20'), at: '2026-03-01T08:30:00Z' });
  assert.equal(before.answer.sessions[0]?.device_id, null, 'a configuration of no device');
  assert.equal((await portal.post('/destroy', { user_id: 'erin' })).status, 204);
  await recordSessions(portal, [
    {
      user: 'frank',
      key: 'f1',
      four: '10.44.0.20',
      six: 'fd44::14',
      from: '198.51.100.6',
      start: '2026-03-01T10:00:00Z',
      end: null,
    },
  ]);
  const port = portOf(AFTERNOON, '10.44.0.20', 5);
  assert.deepEqual(await whoHad(portal, { ...port, at: '2026-03-01T08:30:00Z' }), ['erin'], 'the destroyed user');
  assert.deepEqual(await whoHad(portal, { ...port, at: '2026-03-01T10:30:00Z' }), ['frank'], 'the next holder');
});

test('a destroyed user’s session is not named with the device of the next user who got its WireGuard key', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());
  // erin's laptop keeps its own key; she used it in the morning, then left and was destroyed.
  const { publicKey } = generateWireGuardKeyPair();
  const accept = { accept: 'application/x-wireguard-profile' };
  const erins = await portal.post(
    '/create',
    { user_id: 'erin', profile_id: 'employees', public_key: publicKey },
    accept,
  );
  assert.equal(erins.status, 200, erins.text);
  await recordSessions(portal, [
    {
      user: 'erin',
      key: publicKey,
      four: '10.44.0.20',
      six: 'fd44::14',
      from: '198.51.100.5',
      start: '2026-03-01T08:00:00Z',
      end: '2026-03-01T09:00:00Z',
    },
  ]);
  assert.equal((await portal.post('/destroy', { user_id: 'erin' })).status, 204);
  // The laptop is handed on to frank, registered as his device, and enrolled with the same key.
  const franksDevice = await handLaptopToFrank(portal, publicKey);
  await recordSessions(portal, [
    {
      user: 'frank',
      key: publicKey,
      four: '10.44.0.21',
      six: 'fd44::15',
      from: '198.51.100.6',
      start: '2026-03-01T10:00:00Z',
      end: null,
    },
  ]);

  const morning = await attribute(portal, { ip: '10.44.0.20', at: '2026-03-01T08:30:00Z' });
  assert.equal(morning.response.status, 200, morning.response.text);
  assert.deepEqual(
    morning.answer.sessions.map((session) => [session.user_id, session.device_id]),
    [['erin', null]],
    'erin’s configuration is gone: her session names no device, not frank’s',
  );
  const now = await attribute(portal, { ip: '10.44.0.21', at: '2026-03-01T10:30:00Z' });
  assert.deepEqual(
    now.answer.sessions.map((session) => [session.user_id, session.device_id]),
    [['frank', franksDevice]],
    'frank’s own session names his device',
  );
});

test('a port outside every block, an address no node used and an address nobody held then answer 404 with the reason', async (t) => {
  const portal = await startWithHistory();
  t.after(() => portal.close());
  const at = '2026-03-01T09:00:00Z';

  const lastUsed = new DeterministicNat(MORNING).blocksPerAddress * MORNING.portsPerClient + 1023;
  const cases: [Record<string, string>, RegExp][] = [
    [{ ip: '192.0.2.10', port: String(lastUsed + 1), at }, /port \d+ of 192\.0\.2\.10 is outside every client's block/],
    [{ ip: '192.0.2.10', port: '80', at }, /port 80 of 192\.0\.2\.10 is outside every client's block/],
    [
      { ip: '203.0.113.5', port: '40000', at },
      /no node used the public address 203\.0\.113\.5 at 2026-03-01T09:00:00\+00:00/,
    ],
    [{ ...portOf(MORNING, '10.44.0.99'), at }, /no session held 10\.44\.0\.99 on node 0/],
    [{ ...portOf(MORNING, '10.44.0.7'), at: '2026-02-28T23:00:00Z' }, /no node used the public address 192\.0\.2\.10/],
    [{ ip: '10.44.0.7', at: '2026-03-01T12:30:00Z' }, /no session held 10\.44\.0\.7 at 2026-03-01T12:30:00\+00:00/],
    [{ ip: '192.0.2.10', at }, /it is a public address of node 0, give the "port" of the report/],
  ];
  for (const [query, reason] of cases) {
    const { response } = await attribute(portal, query);
    assert.equal(response.status, 404, `${JSON.stringify(query)}: ${response.text}`);
    assert.match((response.json() as { error: string }).error, reason);
  }
});

test('a node that masqueraded then answers 409 naming it, while older moments still use the mapping of their time', async (t) => {
  const portal = await startWithHistory();
  t.after(() => portal.close());
  await recordMapping(portal, '2026-03-01T20:00:00+00:00', { mode: 'masquerade' });

  const { response } = await attribute(portal, { ip: '192.0.2.10', port: '40000', at: '2026-03-01T21:00:00Z' });
  assert.equal(response.status, 409, response.text);
  assert.match(
    (response.json() as { error: string }).error,
    /node 0 masqueraded then: a masquerading node's public address and port cannot be traced to a client/,
  );
  assert.deepEqual(await whoHad(portal, { ...portOf(AFTERNOON, '10.44.0.7'), at: '2026-03-01T14:00:00Z' }), ['bob']);
  assert.deepEqual(
    await whoHad(portal, { ip: '10.44.0.7', at: '2026-03-01T21:00:00Z' }),
    ['bob'],
    'the tunnel address still answers',
  );
});

test('when two nodes’ mappings claim the same public address at once, attribution names no one and answers 409 with every candidate', async (t) => {
  const portal = await startWithHistory();
  t.after(() => portal.close());
  // Node 1 says it translates its own clients behind node 0's addresses too (misconfigured, or lying).
  const claimed: NatSettings = { ...MORNING, ranges: ['10.46.0.0/24'] };
  await portal.portal.ctx.db.transaction().execute((trx) =>
    recordNatMapping(
      trx,
      {
        nodeNumber: asNodeNumber(1),
        appliedAt: '2026-03-01T00:00:00+00:00',
        mapping: { mode: 'deterministic', settings: claimed },
      },
      '2026-03-01T00:00:00+00:00',
    ),
  );
  await openConnection(portal.portal.ctx.db, {
    userId: asUserId('erin'),
    profileId: asProfileId('employees'),
    vpnProto: 'wireguard',
    connectionId: 'e1',
    nodeNumber: asNodeNumber(1),
    ipFour: '10.46.0.7',
    ipSix: 'fd44::e',
    originatingIp: '198.51.100.5',
    connectedAt: new Date('2026-03-01T08:00:00Z'),
  });

  const { response } = await attribute(portal, { ...portOf(MORNING, '10.44.0.7'), at: '2026-03-01T09:00:00Z' });
  assert.equal(response.status, 409, `neither alice (node 0) nor erin (node 1) is named: ${response.text}`);
  const { error } = response.json() as { error: string };
  assert.match(error, /more than one node had a NAT mapping with 192\.0\.2\.1[01] at/);
  assert.match(error, /node 0: 10\.44\.0\.7; node 1: 10\.46\.0\.7/, 'every candidate, for the desk to check');
  assert.deepEqual(
    await whoHad(portal, { ip: '10.44.0.7', at: '2026-03-01T09:00:00Z' }),
    ['alice'],
    'each candidate’s client address still answers',
  );
});

test('when a client address passes from one user to another within one second, that second through NAT names no one and answers 409 with both', async (t) => {
  const portal = await startWithHistory();
  t.after(() => portal.close());
  // Times are kept to the second: grace's session ended in the second heidi's began.
  await recordSessions(portal, [
    {
      user: 'grace',
      key: 'g1',
      four: '10.44.0.30',
      six: 'fd44::1e',
      from: '198.51.100.7',
      start: '2026-03-01T14:00:00Z',
      end: '2026-03-01T15:00:00.200Z',
    },
    {
      user: 'heidi',
      key: 'h1',
      four: '10.44.0.30',
      six: 'fd44::1e',
      from: '198.51.100.8',
      start: '2026-03-01T15:00:00.700Z',
      end: null,
    },
  ]);
  const port = portOf(AFTERNOON, '10.44.0.30', 3);

  const { response } = await attribute(portal, { ...port, at: '2026-03-01T15:00:00Z' });
  assert.equal(response.status, 409, `neither grace nor heidi is named: ${response.text}`);
  const { error } = response.json() as { error: string };
  assert.match(error, /10\.44\.0\.30 on node 0 passed from one session to another within 2026-03-01T15:00:00\+00:00/);
  assert.match(error, /heidi \(connection h1, from 2026-03-01T15:00:00\+00:00, still open\)/, 'the newer candidate');
  assert.match(
    error,
    /grace \(connection g1, from 2026-03-01T14:00:00\+00:00 until 2026-03-01T15:00:00\+00:00\)/,
    'the older candidate',
  );
  const [row] = await auditLog(portal, 1);
  assert.deepEqual([row?.call, row?.status, row?.userId], ['attribution', 409, null], 'the audit row names no one');

  assert.deepEqual(await whoHad(portal, { ...port, at: '2026-03-01T14:59:59Z' }), ['grace'], 'the second before');
  assert.deepEqual(await whoHad(portal, { ...port, at: '2026-03-01T15:00:01Z' }), ['heidi'], 'the second after');
  assert.deepEqual(
    await whoHad(portal, { ip: '10.44.0.30', at: '2026-03-01T15:00:00Z' }),
    ['heidi', 'grace'],
    'by the tunnel address, every session that held it in that second is listed',
  );
});

test('in the second a node’s NAT mapping changed, the port is read through the old mapping and the new one: one user is named, two answer 409', async (t) => {
  const portal = await startWithHistory();
  t.after(() => portal.close());
  // Port 2524 of 192.0.2.10 is 10.44.0.8 in the morning mapping and 10.44.0.17 in the afternoon one.
  const port = { ip: '192.0.2.10', port: '2524' };
  assert.equal(new DeterministicNat(MORNING).clientOf(port.ip, 2524), '10.44.0.8');
  assert.equal(new DeterministicNat(AFTERNOON).clientOf(port.ip, 2524), '10.44.0.17');
  await recordSessions(portal, [
    {
      user: 'judy',
      key: 'j1',
      four: '10.44.0.8',
      six: 'fd44::8',
      from: '198.51.100.11',
      start: '2026-03-01T11:00:00Z',
      end: '2026-03-01T13:00:00Z',
    },
  ]);
  // The change was applied at 12:00:00.something: a packet of 12:00:00.300 may have left through the old one.
  const { response, answer } = await attribute(portal, { ...port, at: '2026-03-01T12:00:00Z' });
  assert.equal(response.status, 200, `the old mapping's client held the port in that second: ${response.text}`);
  assert.deepEqual(
    [answer.translation?.client_ip, answer.translation?.mapping_applied_at, answer.sessions.map((s) => s.user_id)],
    ['10.44.0.8', '2026-03-01T00:00:00+00:00', ['judy']],
  );
  const later = await attribute(portal, { ...port, at: '2026-03-01T12:00:01Z' });
  assert.equal(later.response.status, 404, 'a second later, only the new mapping was in force');

  await recordSessions(portal, [
    {
      user: 'kim',
      key: 'k1',
      four: '10.44.0.17',
      six: 'fd44::11',
      from: '198.51.100.12',
      start: '2026-03-01T11:30:00Z',
      end: null,
    },
  ]);
  const both = await attribute(portal, { ...port, at: '2026-03-01T12:00:00Z' });
  assert.equal(both.response.status, 409, `neither judy nor kim is named: ${both.response.text}`);
  const { error } = both.response.json() as { error: string };
  assert.match(error, /the NAT mapping with 192\.0\.2\.10 changed within 2026-03-01T12:00:00\+00:00/);
  assert.match(error, /node 0's mapping from 2026-03-01T12:00:00\+00:00: 10\.44\.0\.17, kim/);
  assert.match(error, /node 0's mapping from 2026-03-01T00:00:00\+00:00: 10\.44\.0\.8, judy/);
  assert.deepEqual(await whoHad(portal, { ...port, at: '2026-03-01T11:59:59Z' }), ['judy'], 'the second before');
  assert.deepEqual(await whoHad(portal, { ...port, at: '2026-03-01T12:00:01Z' }), ['kim'], 'the second after');

  // From masquerading to a deterministic mapping within the second: the packet may have been masqueraded.
  await recordMapping(portal, '2026-03-01T20:00:00+00:00', { mode: 'masquerade' });
  await recordMapping(portal, '2026-03-01T21:00:00+00:00', { mode: 'deterministic', settings: AFTERNOON });
  const masqueraded = await attribute(portal, { ...port, at: '2026-03-01T21:00:00Z' });
  assert.equal(masqueraded.response.status, 409, `kim is not named: ${masqueraded.response.text}`);
  assert.match(masqueraded.response.text, /node 0 changed between masquerading and a deterministic NAT mapping/);
  assert.deepEqual(await whoHad(portal, { ...port, at: '2026-03-01T21:00:01Z' }), ['kim'], 'the second after');
});

test('when one user reconnects within one second on the same client address, attribution through NAT names that user with both sessions', async (t) => {
  const portal = await startWithHistory();
  t.after(() => portal.close());
  const reconnect = {
    user: 'ivan',
    key: 'i1',
    four: '10.44.0.31',
    six: 'fd44::1f',
    from: '198.51.100.9',
  };
  await recordSessions(portal, [
    { ...reconnect, start: '2026-03-01T14:00:00Z', end: '2026-03-01T15:00:00Z' },
    { ...reconnect, from: '198.51.100.10', start: '2026-03-01T15:00:00Z', end: null },
  ]);
  const { response, answer } = await attribute(portal, {
    ...portOf(AFTERNOON, '10.44.0.31'),
    at: '2026-03-01T15:00:00Z',
  });
  assert.equal(response.status, 200, response.text);
  assert.deepEqual(
    answer.sessions.map((session) => [session.user_id, session.connection_id]),
    [
      ['ivan', 'i1'],
      ['ivan', 'i1'],
    ],
    'the session begun in that second first, then the one ended in it',
  );
  const [row] = await auditLog(portal, 1);
  assert.equal(row?.userId, 'ivan', 'the audit row names the one user');
});

test('without a port, a tunnel address (IPv4 or IPv6) or the client’s own address answers as connection_log does', async (t) => {
  const portal = await startWithHistory();
  t.after(() => portal.close());
  for (const ip of ['10.44.0.7', 'fd44:0::7', '198.51.100.1']) {
    const { response, answer } = await attribute(portal, { ip, at: '2026-03-01T09:00:00Z' });
    assert.equal(response.status, 200, `${ip}: ${response.text}`);
    assert.equal(answer.translation, null, ip);
    assert.deepEqual(
      answer.sessions.map((session) => session.user_id),
      ['alice'],
      ip,
    );
  }
});

test('an IPv4 address written IPv4-mapped (::ffff:192.0.2.10) or through NAT64 (64:ff9b::192.0.2.10), as a dual-stack or IPv6-only server logs it, answers as the IPv4 address does', async (t) => {
  const portal = await startWithHistory();
  t.after(() => portal.close());
  const { ip, port } = portOf(MORNING, '10.44.0.7', 17);
  const through = await attribute(portal, { ip: `::ffff:${ip}`, port, at: '2026-03-01T09:00:00Z' });
  assert.equal(through.response.status, 200, through.response.text);
  assert.equal(through.answer.translation?.client_ip, '10.44.0.7');
  assert.deepEqual(
    through.answer.sessions.map((session) => session.user_id),
    ['alice'],
  );
  // An IPv6-only server behind NAT64 logs the node's public address in the well-known prefix.
  for (const seen of [`64:ff9b::${ip}`, `64:FF9B::${ipv4AsHex(ip)}`]) {
    const nat64 = await attribute(portal, { ip: seen, port, at: '2026-03-01T09:00:00Z' });
    assert.equal(nat64.response.status, 200, `${seen}: ${nat64.response.text}`);
    assert.deepEqual(nat64.answer, through.answer, seen);
  }
  for (const mapped of ['::ffff:10.44.0.7', '::FFFF:a2c:7', '::ffff:198.51.100.1']) {
    assert.deepEqual(await whoHad(portal, { ip: mapped, at: '2026-03-01T09:00:00Z' }), ['alice'], mapped);
    const page = await portal.get('/connection_log', { ip: mapped, at: '2026-03-01T09:00:00Z' });
    assert.equal(page.status, 200, page.text);
    assert.deepEqual(
      (page.json() as { connection_log: { user_id: string }[] }).connection_log.map((entry) => entry.user_id),
      ['alice'],
      `connection_log?ip=${mapped}`,
    );
  }
});

test('a key limited to some profiles finds only their users: another profile’s session is as absent as none', async (t) => {
  const portal = await startWithHistory();
  t.after(() => portal.close());
  const guests = await makeAdminKey(portal, 'guests-reader', { scope: 'read', profiles: ['guests'] });
  const employees = await makeAdminKey(portal, 'employees-reader', { scope: 'read', profiles: ['employees'] });
  const at = '2026-03-01T09:00:00Z';

  const hidden = await attribute(portal, { ...portOf(MORNING, '10.44.0.7'), at }, guests);
  const empty = await attribute(portal, { ...portOf(MORNING, '10.44.0.99'), at }, guests);
  assert.deepEqual([hidden.response.status, empty.response.status], [404, 404]);
  assert.doesNotMatch(hidden.response.text, /alice/);
  assert.deepEqual(await whoHad(portal, { ...portOf(MORNING, '10.45.0.7'), at }, guests), ['dave']);
  assert.deepEqual(await whoHad(portal, { ...portOf(MORNING, '10.44.0.7'), at }, employees), ['alice']);
  assert.equal((await attribute(portal, { ip: '198.51.100.4', at }, employees)).response.status, 404);
});

/** Employees on node 0, guests on node 1 only: a key for one profile may not learn of the other's node. */
const profilesOnTwoNodes: Partial<PortalConfigFile> = {
  ProfileList: [employeesProfile, { ...guestsProfile, onNode: [1] }],
};
const GUESTS_NODE = asNodeNumber(1);

test('through NAT, a key limited to some profiles learns of no other profile’s node: no number, client address or masquerading', async (t) => {
  const portal = await startWithHistory(profilesOnTwoNodes);
  t.after(() => portal.close());
  const guests = await makeAdminKey(portal, 'guests-reader', { scope: 'read', profiles: ['guests'] });
  const at = '2026-03-01T09:00:00Z';

  const employeesAddress = await attribute(portal, { ...portOf(MORNING, '10.44.0.7'), at }, guests);
  assert.equal(employeesAddress.response.status, 404, employeesAddress.response.text);
  assert.match(
    employeesAddress.response.text,
    /no node of the key's profiles used the public address 192\.0\.2\.1[01] at 2026-03-01T09:00:00\+00:00/,
  );
  const withoutPort = await attribute(portal, { ip: '192.0.2.10', at }, guests);
  assert.equal(withoutPort.response.status, 404, withoutPort.response.text);
  assert.doesNotMatch(withoutPort.response.text, /public address of node/, 'node 0 is not named by its address');

  await recordMapping(portal, '2026-03-01T20:00:00+00:00', { mode: 'masquerade' });
  const masqueraded = await attribute(portal, { ip: '192.0.2.10', port: '40000', at: '2026-03-01T21:00:00Z' }, guests);
  assert.equal(
    masqueraded.response.status,
    404,
    `node 0 masquerading is none of the key's: ${masqueraded.response.text}`,
  );
  for (const { response } of [employeesAddress, withoutPort, masqueraded])
    assert.doesNotMatch(response.text, /node 0|10\.44\.|alice/, 'nothing of node 0 is told');

  const everyProfile = await attribute(portal, { ip: '192.0.2.10', port: '40000', at: '2026-03-01T21:00:00Z' });
  assert.equal(everyProfile.response.status, 409, 'a key for every profile is still told node 0 masqueraded');
});

test('through NAT, an ambiguity that involves another profile’s node still answers a limited key 409, counting that node without naming it', async (t) => {
  const portal = await startTestPortal({ config: profilesOnTwoNodes, clock: new ManualClock() });
  t.after(() => portal.close());
  const employees = await makeAdminKey(portal, 'employees-reader', { scope: 'read', profiles: ['employees'] });
  // Node 0 has 192.0.2.10 all day; node 1 (guests) claimed it too until noon, then moved to 192.0.2.20.
  const nodeZero: NatSettings = { ranges: ['10.44.0.0/24'], publicAddresses: ['192.0.2.10'], portsPerClient: 100 };
  const nodeOne: NatSettings = { ...nodeZero, ranges: ['10.45.0.0/24'] };
  await recordMapping(portal, '2026-03-01T00:00:00+00:00', { mode: 'deterministic', settings: nodeZero });
  await recordMapping(portal, '2026-03-01T00:00:00+00:00', { mode: 'deterministic', settings: nodeOne }, GUESTS_NODE);
  await recordMapping(
    portal,
    CHANGE,
    { mode: 'deterministic', settings: { ...nodeOne, publicAddresses: ['192.0.2.20'] } },
    GUESTS_NODE,
  );
  const session = { six: 'fd44::c', end: null, start: '2026-03-01T08:00:00Z' };
  await recordSessions(portal, [
    { ...session, user: 'carol', key: 'c1', four: '10.44.0.12', from: '198.51.100.3' },
    { ...session, user: 'dave', profile: 'guests', node: 1, key: 'd1', four: '10.45.0.12', from: '198.51.100.4' },
  ]);
  const port = portOf(nodeZero, '10.44.0.12');
  assert.deepEqual(portOf(nodeOne, '10.45.0.12'), port, 'before noon the port was a client’s on either node');

  const claimedByBoth = await attribute(portal, { ...port, at: '2026-03-01T09:00:00Z' }, employees);
  assert.equal(claimedByBoth.response.status, 409, `carol is not named on a guess: ${claimedByBoth.response.text}`);
  assert.match(claimedByBoth.response.text, /\(node 0: 10\.44\.0\.12; 1 node of other profiles\)/);
  const changedThatSecond = await attribute(portal, { ...port, at: CHANGE }, employees);
  assert.equal(changedThatSecond.response.status, 409, changedThatSecond.response.text);
  assert.match(
    changedThatSecond.response.text,
    /node 0's mapping from [^:]+:00:00\+00:00: 10\.44\.0\.12, carol; 1 node of other profiles/,
  );
  for (const { response } of [claimedByBoth, changedThatSecond])
    assert.doesNotMatch(response.text, /node 1|10\.45\.|dave|d1/, 'nothing of node 1 is named');

  const everyProfile = await attribute(portal, { ...port, at: CHANGE });
  assert.match(everyProfile.response.text, /10\.44\.0\.12, carol; node 1's mapping from [^)]*10\.45\.0\.12, dave/);
  assert.deepEqual(await whoHad(portal, { ...port, at: '2026-03-01T12:00:01Z' }, employees), ['carol'], 'after noon');
});

test('a look-up is audited with its reason and whom it found; one without a reason or with bad input is refused with 400 and leaves no row', async (t) => {
  const portal = await startWithHistory();
  t.after(() => portal.close());
  const reader = await makeAdminKey(portal, 'abuse-desk', { scope: 'read' });
  const [before] = await auditLog(portal, 1);

  const refusals: [Record<string, string>, RegExp][] = [
    [{ ip: '192.0.2.10', port: '2000', at: '2026-03-01T09:00:00Z' }, /missing query parameter "reason"/],
    [{ ip: '192.0.2.10', port: '2000', at: '2026-03-01T09:00:00Z', reason: '' }, /invalid value for "reason"/],
    [
      { ip: '192.0.2.10', port: '2000', at: '2026-03-01T09:00:00Z', reason: 'x'.repeat(201) },
      /invalid value for "reason": a reason of 1 to 200 characters/,
    ],
    [{ ip: '192.0.2.10', port: '0', at: '2026-03-01T09:00:00Z', reason: 'r' }, /invalid value for "port"/],
    [{ ip: '192.0.2.10', port: '65536', at: '2026-03-01T09:00:00Z', reason: 'r' }, /invalid value for "port"/],
    [{ ip: 'fd44::7', port: '2000', at: '2026-03-01T09:00:00Z', reason: 'r' }, /with "port", the public IPv4 address/],
    [{ ip: '192.0.2.10', port: '2000', reason: 'r' }, /missing query parameter "at"/],
    [{ ip: '192.0.2.300', at: '2026-03-01T09:00:00Z', reason: 'r' }, /invalid value for "ip"/],
    [{ ip: '10.44.0.7', at: '2026-03-01T24:00Z', reason: 'r' }, /invalid value for "at": "2026-03-01T24:00Z" is not/],
    [{ ip: '10.44.0.7', at: '2026-02-28T24:00:00+01:00', reason: 'r' }, /invalid value for "at"/],
  ];
  for (const [query, message] of refusals) {
    const response = await portal.get('/attribution', query, bearer(reader));
    assert.equal(response.status, 400, `${JSON.stringify(query)}: ${response.text}`);
    assert.match((response.json() as { error: string }).error, message);
  }
  assert.equal((await auditLog(portal, 1))[0]?.auditId, before?.auditId, 'a refused look-up leaves no row');

  const found = await portal.get(
    '/attribution',
    { ...portOf(MORNING, '10.44.0.7'), at: '2026-03-01T09:00:00Z', reason: 'CERT report #981: port scan' },
    bearer(reader),
  );
  assert.equal(found.status, 200, found.text);
  const missed = await portal.get(
    '/attribution',
    { ip: '203.0.113.5', port: '40000', at: '2026-03-01T09:00:00Z', reason: 'CERT report #982' },
    bearer(reader),
  );
  assert.equal(missed.status, 404);
  const [latest, earlier] = await auditLog(portal, 2);
  assert.deepEqual(
    [earlier?.keyName, earlier?.call, earlier?.status, earlier?.userId, earlier?.parameters['reason']],
    ['abuse-desk', 'attribution', 200, 'alice', 'CERT report #981: port scan'],
    'the answered look-up names whom it found',
  );
  assert.deepEqual(
    [latest?.call, latest?.status, latest?.userId, latest?.parameters['reason'], latest?.parameters['port']],
    ['attribution', 404, null, 'CERT report #982', '40000'],
    'a look-up that found nobody is audited too',
  );
  assert.match(latest?.detail ?? '', /no node used the public address 203\.0\.113\.5/);
});

test('a moment that has not come yet is refused with 400, a minute’s lead of the reporting clock is not, and an offset of whole hours is read', async (t) => {
  const portal = await startWithHistory();
  t.after(() => portal.close());
  // The portal's clock says 2026-03-02T09:00:00Z; bob has held 10.44.0.7 since 13:00 the day before.
  const [before] = await auditLog(portal, 1);

  for (const path of ['/attribution', '/connection_log']) {
    const typo = await portal.get(path, { ip: '10.44.0.7', at: '2027-03-02T09:00:00Z', reason: 'r' });
    assert.equal(typo.status, 400, `${path}: bob is not named for a year that has not come: ${typo.text}`);
    assert.match(
      (typo.json() as { error: string }).error,
      /invalid value for "at": 2027-03-02T09:00:00\+00:00 has not come yet \(the portal's clock says 2026-03-02T09:00:00\+00:00\)/,
    );
    const justAhead = await portal.get(path, { ip: '10.44.0.7', at: '2026-03-02T09:01:01Z', reason: 'r' });
    assert.equal(justAhead.status, 400, `${path}: 61 s ahead`);
  }
  assert.equal((await auditLog(portal, 1))[0]?.auditId, before?.auditId, 'a refused look-up leaves no row');

  assert.deepEqual(await whoHad(portal, { ip: '10.44.0.7', at: '2026-03-02T09:01:00Z' }), ['bob'], 'a minute ahead');
  assert.deepEqual(await whoHad(portal, { ip: '10.44.0.7', at: '2026-03-01T10:00:00+01' }), ['alice'], '09:00 UTC');
  assert.deepEqual(await whoHad(portal, { ip: '10.44.0.7', at: '2026-03-01T15:00:00+01' }), ['bob'], '14:00 UTC');
});

test('connection_log with ip records its reason in the audit log; a reason is required only when lookups.requireReason.connectionLog says so', async (t) => {
  const portal = await startWithHistory();
  t.after(() => portal.close());
  const query = { ip: '10.44.0.7', at: '2026-03-01T09:00:00Z' };
  const plain = await portal.get('/connection_log', query);
  assert.equal(plain.status, 200, 'no reason needed by default: existing clients keep working');
  const reasoned = await portal.get('/connection_log', { ...query, reason: 'abuse report 17' });
  assert.equal(reasoned.status, 200);
  const [latest, earlier] = await auditLog(portal, 2);
  assert.deepEqual(
    [
      earlier?.call,
      earlier?.userId,
      earlier?.parameters['reason'],
      latest?.call,
      latest?.userId,
      latest?.parameters['reason'],
    ],
    ['connection_log', 'alice', undefined, 'connection_log', 'alice', 'abuse report 17'],
  );
  const [newest] = await auditLog(portal, 1);
  assert.equal((await portal.get('/connection_log', { user_id: 'alice' })).status, 200);
  assert.equal((await auditLog(portal, 1))[0]?.auditId, newest?.auditId, 'a listing by user is no look-up by address');

  const strict = await startTestPortal({
    config: { ...twoProfiles, lookups: { requireReason: { attribution: false, connectionLog: true } } },
    clock: new ManualClock(),
  });
  t.after(() => strict.close());
  await recordSessions(strict, HISTORY);
  const refused = await strict.get('/connection_log', query);
  assert.equal(refused.status, 400);
  assert.match(refused.text, /missing query parameter \\"reason\\"/);
  assert.equal((await strict.get('/connection_log', { ...query, reason: 'r' })).status, 200);
  const noReason = await strict.get('/attribution', { ip: '10.44.0.7', at: '2026-03-01T09:00:00Z' });
  assert.equal(noReason.status, 200, 'attribution without a reason when the option allows it');
});

/** `192.0.2.10` as the two hexadecimal groups an IPv6 address holds it in (`c000:20a`). */
function ipv4AsHex(ip: string): string {
  const [a = 0, b = 0, c = 0, d = 0] = ip.split('.').map(Number);
  return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}
