// "Who had this address then?", as an abuse report asks: GET /connection_log by `ip` — a tunnel IPv4 or IPv6
// address or the client's originating address, in any IPv6 text form — and `at`, a moment at
// which the session was open; combined with the other filters, paged, and refused with a 400
// that changes nothing when the address or the moment is not one. The clock stands on the day
// after the history, so the daily housekeeping keeps it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asNodeNumber, asProfileId, asUserId } from '../../../src/shared/ids.js';
import { closeConnection, openConnection } from '../../../src/storage/connection-log.js';
import { bearer, makeAdminKey, ManualClock, portalState, twoProfiles } from '../../support/admin-keys.js';
import {
  openVpnConfiguration,
  openVpnEmployees,
  reportOpenVpnConnect,
  reportOpenVpnDisconnect,
} from '../../support/openvpn-sessions.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

interface Session {
  readonly user: string;
  readonly profile?: string;
  readonly key: string;
  readonly four: string;
  readonly six: string;
  readonly from: string | null;
  readonly start: string;
  readonly end: string | null;
}

/** History rows as the connection-log listener writes them for the nodes' reports. */
async function record(portal: TestPortal, sessions: readonly Session[]): Promise<void> {
  for (const session of sessions) {
    const nodeNumber = asNodeNumber(0);
    await openConnection(portal.portal.ctx.db, {
      userId: asUserId(session.user),
      profileId: asProfileId(session.profile ?? 'employees'),
      vpnProto: 'openvpn',
      connectionId: session.key,
      nodeNumber,
      ipFour: session.four,
      ipSix: session.six,
      originatingIp: session.from,
      connectedAt: new Date(session.start),
    });
    if (session.end !== null) {
      await closeConnection(portal.portal.ctx.db, {
        connectionId: session.key,
        nodeNumber,
        disconnectedAt: new Date(session.end),
        bytesIn: 1,
        bytesOut: 2,
      });
    }
  }
}

type Entry = {
  user_id: string;
  connected_at: string;
  disconnected_at: string | null;
  ip_six: string;
  originating_ip: string | null;
};

async function search(portal: TestPortal, query: Record<string, string>, key?: string): Promise<Entry[]> {
  const response = await portal.get('/connection_log', query, key === undefined ? undefined : bearer(key));
  assert.equal(response.status, 200, response.text);
  return (response.json() as { connection_log: Entry[] }).connection_log;
}

const users = (entries: readonly Entry[]): string[] => entries.map((entry) => entry.user_id);

/** 10.44.0.7 went from alice (morning) to bob (afternoon, still connected); carol came from 198.51.100.7. */
const HISTORY: readonly Session[] = [
  {
    user: 'alice',
    key: 'a1',
    four: '10.44.0.7',
    six: 'fd44::7',
    from: '192.0.2.10',
    start: '2026-03-01T08:00:00Z',
    end: '2026-03-01T12:00:00Z',
  },
  {
    user: 'bob',
    key: 'b1',
    four: '10.44.0.7',
    six: 'fd44::7',
    from: '2001:db8:0:0::1',
    start: '2026-03-01T13:00:00Z',
    end: null,
  },
  {
    user: 'carol',
    key: 'c1',
    four: '10.44.0.8',
    six: 'fd44::8',
    from: '198.51.100.7',
    start: '2026-03-01T09:00:00Z',
    end: '2026-03-01T10:00:00Z',
  },
  {
    user: 'dave',
    profile: 'guests',
    key: 'd1',
    four: '10.45.0.7',
    six: 'fd45::7',
    from: '192.0.2.10',
    start: '2026-03-01T11:00:00Z',
    end: null,
  },
];

test('ip and at name who had a tunnel address at a moment: the session open then, not the ones before or after', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());
  await record(portal, HISTORY);

  assert.deepEqual(users(await search(portal, { ip: '10.44.0.7', at: '2026-03-01T10:00:00Z' })), ['alice']);
  assert.deepEqual(
    users(await search(portal, { ip: '10.44.0.7', at: '2026-03-01T14:02:00+01:00' })),
    ['bob'],
    'an offset is converted to UTC',
  );
  assert.deepEqual(
    users(await search(portal, { ip: '10.44.0.7', at: '2026-03-01T12:30:00Z' })),
    [],
    'nobody had it between the two sessions',
  );
  assert.deepEqual(
    users(await search(portal, { ip: '10.44.0.7', at: '2026-03-01T08:00:00Z' })),
    ['alice'],
    'a session is open from its first second',
  );
  assert.deepEqual(
    users(await search(portal, { ip: '10.44.0.7', at: '2026-03-01T12:00:00Z' })),
    ['alice'],
    'and still in the second it ended, which is kept to the second',
  );
  assert.deepEqual(
    users(await search(portal, { ip: '10.44.0.7', at: '2026-03-01T12:00:01Z' })),
    [],
    'but not after it',
  );
  assert.deepEqual(
    users(await search(portal, { ip: '10.44.0.7', at: '2026-03-02T09:00:00Z' })),
    ['bob'],
    'an open session is open at any later moment, up to now',
  );
  const ahead = await portal.get('/connection_log', { ip: '10.44.0.7', at: '2030-01-01T00:00:00Z' });
  assert.equal(ahead.status, 400, `a moment that has not come names nobody: ${ahead.text}`);
  assert.deepEqual(
    users(await search(portal, { ip: '10.44.0.7' })),
    ['bob', 'alice'],
    'without `at`: every session of the address, newest first',
  );
  assert.deepEqual(
    users(await search(portal, { at: '2026-03-01T09:30:00Z' })),
    ['carol', 'alice'],
    'without `ip`: every session open then',
  );
});

test('an IPv6 address matches in any text form, and the originating address finds the client as well', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());
  await record(portal, HISTORY);

  for (const form of ['fd44::7', 'fd44:0::7', 'FD44:0000:0000:0000:0000:0000:0000:0007']) {
    assert.deepEqual(users(await search(portal, { ip: form, at: '2026-03-01T09:00:00Z' })), ['alice'], form);
  }
  assert.deepEqual(
    users(await search(portal, { ip: '192.0.2.10' })),
    ['dave', 'alice'],
    'one originating address, two users',
  );
  const [bob] = await search(portal, { ip: '2001:db8::1' });
  assert.deepEqual(
    [bob?.user_id, bob?.originating_ip],
    ['bob', '2001:db8::1'],
    'stored in canonical form, found by it',
  );
  assert.deepEqual(
    users(await search(portal, { ip: '2001:db8:0::1', at: '2026-03-01T12:59:59Z' })),
    [],
    'before the session started',
  );
});

test('ip and at combine with the other filters, the pages and the profile limit of the key', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());
  await record(portal, HISTORY);

  assert.deepEqual(users(await search(portal, { ip: '192.0.2.10', profile_id: 'guests' })), ['dave']);
  assert.deepEqual(users(await search(portal, { ip: '192.0.2.10', user_id: 'alice' })), ['alice']);
  assert.deepEqual(users(await search(portal, { ip: '10.44.0.7', open: 'yes' })), ['bob']);
  assert.deepEqual(users(await search(portal, { ip: '10.44.0.7', since: '2026-03-01T12:30:00Z' })), ['bob']);

  const first = await portal.get('/connection_log', { ip: '10.44.0.7', limit: '1' });
  const page = first.json() as { connection_log: Entry[]; next_cursor: string };
  assert.deepEqual(users(page.connection_log), ['bob']);
  assert.deepEqual(
    users(await search(portal, { ip: '10.44.0.7', limit: '1', cursor: page.next_cursor })),
    ['alice'],
    'the next page',
  );

  const employeesOnly = await makeAdminKey(portal, 'employees-reader', { scope: 'read', profiles: ['employees'] });
  assert.deepEqual(
    users(await search(portal, { ip: '192.0.2.10' }, employeesOnly)),
    ['alice'],
    'a limited key sees its profiles only',
  );
});

test('an address or a moment that is not one is a 400 naming the parameter, and changes nothing', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());
  await record(portal, HISTORY);
  const before = await portalState(portal);
  const refusals: [Record<string, string>, string][] = [
    [
      { ip: '10.44.0.300' },
      'invalid value for "ip": "10.44.0.300" is not an IPv4 or IPv6 address such as 10.10.3.7 or fd00::7',
    ],
    [
      { ip: '10.44.0.0/24' },
      'invalid value for "ip": "10.44.0.0/24" is not an IPv4 or IPv6 address such as 10.10.3.7 or fd00::7',
    ],
    [
      { ip: 'fe80::1%eth0' },
      'invalid value for "ip": "fe80::1%eth0" is not an IPv4 or IPv6 address such as 10.10.3.7 or fd00::7',
    ],
    [{ ip: '' }, 'invalid value for "ip": "" is not an IPv4 or IPv6 address such as 10.10.3.7 or fd00::7'],
    [
      { ip: '10.44.0.7', at: 'yesterday 14:02' },
      'invalid value for "at": "yesterday 14:02" is not an ISO 8601 date or date-time such as 2026-03-01 or 2026-03-01T12:00:00Z',
    ],
    // A day that does not exist (a typo in a report) is not read as another: 30 February is not 2 March.
    [
      { ip: '10.44.0.7', at: '2026-02-30T09:00:00Z' },
      'invalid value for "at": "2026-02-30T09:00:00Z" is not an ISO 8601 date or date-time such as 2026-03-01 or 2026-03-01T12:00:00Z',
    ],
    [
      { ip: '10.44.0.7', at: '2026-04-31' },
      'invalid value for "at": "2026-04-31" is not an ISO 8601 date or date-time such as 2026-03-01 or 2026-03-01T12:00:00Z',
    ],
    // An abuse report's public address and port: connection_log has no ports to read, and must
    // not answer "nobody" for the node's NAT address; attribution traces it.
    [
      { ip: '192.0.2.80', port: '40321', at: '2026-03-01T10:00:00Z' },
      'invalid value for "port": connection_log keeps no ports; GET /attribution traces a public address and port through the node\'s NAT to the session behind it',
    ],
  ];
  // A cursor holding a NUL, which PostgreSQL refuses to compare, is not one of ours either.
  for (const parts of [
    ['\u0000', 'x'],
    ['2026-03-02T09:00:00+00:00', 'a\u0000'],
  ])
    refusals.push([{ cursor: Buffer.from(JSON.stringify(parts)).toString('base64url') }, 'invalid value for "cursor"']);
  for (const [query, message] of refusals) {
    const response = await portal.get('/connection_log', query);
    assert.equal(response.status, 400, JSON.stringify(query));
    assert.deepEqual(response.json(), { error: message });
  }
  assert.deepEqual(await portalState(portal), before);
});

test('an OpenVPN session reported with a long IPv6 form is stored and found in the canonical one', async (t) => {
  const portal = await startTestPortal({ config: openVpnEmployees });
  t.after(() => portal.close());
  const connectionId = await openVpnConfiguration(portal, 'erin');
  await reportOpenVpnConnect(portal, connectionId, {
    originating_ip: '2001:DB8:0:0:0:0:0:9',
    ip_four: '10.60.0.2',
    ip_six: 'fd60:0:0:0::1000',
  });
  const [entry] = await search(portal, { ip: 'fd60::1000', at: new Date().toISOString() });
  assert.deepEqual([entry?.user_id, entry?.ip_six, entry?.originating_ip], ['erin', 'fd60::1000', '2001:db8::9']);
});

test("the client's own address stays with a closed session only where Log.originatingIp is on; the open session has it either way", async (t) => {
  for (const originatingIp of [false, true]) {
    const portal = await startTestPortal({ config: { ...openVpnEmployees, Log: { originatingIp } } });
    t.after(() => portal.close());
    const connectionId = await openVpnConfiguration(portal, 'frank');
    await reportOpenVpnConnect(portal, connectionId, { originating_ip: '192.0.2.44', ip_four: '10.60.0.2' });
    const now = new Date().toISOString();
    const [open] = await search(portal, { ip: '10.60.0.2', at: now });
    assert.equal(open?.originating_ip, '192.0.2.44', `Log.originatingIp ${originatingIp}: the open session`);
    assert.deepEqual(users(await search(portal, { ip: '192.0.2.44' })), ['frank'], 'found by it while open');

    await reportOpenVpnDisconnect(portal, connectionId, { ip_four: '10.60.0.2' });
    const [closed] = await search(portal, { ip: '10.60.0.2' });
    assert.ok(closed?.disconnected_at !== null, 'the session is closed');
    assert.equal(
      closed?.originating_ip,
      originatingIp ? '192.0.2.44' : null,
      `Log.originatingIp ${originatingIp}: the closed session`,
    );
    assert.deepEqual(
      users(await search(portal, { ip: '192.0.2.44' })),
      originatingIp ? ['frank'] : [],
      'found by it once closed only where it is kept',
    );
  }
});
