// POST /create: an administrator provisions a device with a WireGuard configuration file.
// Parameters, defaults, expiry and its headers, Accept negotiation, the file itself, and the
// refusals (unknown profile, bad input, disabled user) that must leave nothing behind.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Clock } from '../../../src/shared/time.js';
import type { NodeNumber, WireGuardKey } from '../../../src/shared/ids.js';
import { parseIpAddress, parseIpPrefix, prefixContainsAddress } from '../../../src/net/ip-prefix.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import { errorBody, rawRequest, type RawResponse } from '../../support/raw-http.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

const WIREGUARD = 'application/x-wireguard-profile';
const ATOM = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/;
const fixedClock: Clock = { now: () => new Date('2026-01-31T10:00:00Z') };

/** POST /create with exactly the given Accept header; `null` sends none at all. */
function create(
  portal: TestPortal,
  form: Record<string, string> | string,
  accept: string | null = WIREGUARD,
): Promise<RawResponse> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${portal.secret}`,
    'content-type': 'application/x-www-form-urlencoded',
  };
  if (accept !== null) headers['accept'] = accept;
  const body = typeof form === 'string' ? form : new URLSearchParams(form).toString();
  return rawRequest(`${portal.adminBase}/create`, { method: 'POST', headers, body });
}

interface ConfigurationEntry {
  connection_id: string;
  profile_id: string;
  display_name: string;
  auth_key: string | null;
  expires_at: string;
  vpn_proto: string;
}

async function configurationsOf(portal: TestPortal, userId: string): Promise<ConfigurationEntry[]> {
  return portal.admin.userConfigurationList(userId);
}

async function users(portal: TestPortal): Promise<string[]> {
  return portal.admin.users();
}

test('creating a configuration for a new user creates the user and returns a WireGuard file that works', async (t) => {
  const portal = await startTestPortal({ clock: fixedClock });
  t.after(() => portal.close());
  assert.deepEqual(await users(portal), []);

  const response = await create(portal, { user_id: 'alice', profile_id: 'employees' });
  assert.equal(response.status, 200);
  assert.equal(response.headers['content-type'], WIREGUARD);
  assert.deepEqual(await users(portal), ['alice']);

  // The file: no comment lines, [Interface] then [Peer], ending in one newline as a text file does.
  assert.doesNotMatch(response.text, /^#/m);
  assert.equal(response.text.endsWith('\n'), true);
  assert.equal(response.text.endsWith('\n\n'), false);
  const file = parseWireGuardFile(response.text);
  assert.deepEqual(file.sections, ['Interface', 'Peer']);
  assert.deepEqual([...file.interface.keys()], ['PrivateKey', 'Address', 'DNS']);
  assert.deepEqual([...file.peer.keys()], ['PublicKey', 'AllowedIPs', 'Endpoint']);

  const [ipFour, ipSix] = (file.interface.get('Address') ?? '').split(',');
  assert.equal(ipFour, '10.44.0.2/24');
  assert.equal(ipSix, 'fd44::2/64');
  assert.ok(prefixContainsAddress(parseIpPrefix('10.44.0.0/24'), parseIpAddress(ipFour?.split('/')[0] ?? '')));
  assert.ok(prefixContainsAddress(parseIpPrefix('fd44::/64'), parseIpAddress(ipSix?.split('/')[0] ?? '')));
  assert.equal(file.interface.get('DNS'), '9.9.9.9');
  assert.equal(file.peer.get('PublicKey'), portal.portal.ctx.keys.wireGuardPublicKey(0 as NodeNumber));
  assert.equal(file.peer.get('AllowedIPs'), '0.0.0.0/0,::/0');
  assert.equal(file.peer.get('Endpoint'), 'vpn.example.org:51820');

  // The private key in the file belongs to the public key the portal lists as the connection id.
  const [entry, ...others] = await configurationsOf(portal, 'alice');
  assert.equal(others.length, 0);
  const privateKey = file.interface.get('PrivateKey') as WireGuardKey;
  assert.equal(entry?.connection_id, wireGuardPublicKey(privateKey));
  assert.deepEqual(entry, {
    connection_id: wireGuardPublicKey(privateKey),
    profile_id: 'employees',
    display_name: 'Admin API',
    auth_key: null,
    expires_at: '2026-05-01T10:00:00+00:00',
    vpn_proto: 'wireguard',
  });

  // The private key is handed out once and never stored.
  const stored = await portal.portal.ctx.db.selectFrom('wg_peers').selectAll().execute();
  assert.equal(stored.length, 1);
  assert.doesNotMatch(JSON.stringify(stored), new RegExp(privateKey.replace(/[+/=]/g, '\\$&')));
});

test('a second configuration for an existing user keeps the user and gets the next address', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const first = await create(portal, { user_id: 'alice', profile_id: 'employees', display_name: 'Laptop' });
  const second = await create(portal, { user_id: 'alice', profile_id: 'employees', display_name: 'Phone' });
  assert.equal(first.status, 200);
  assert.equal(second.status, 200);
  assert.equal(parseWireGuardFile(second.text).interface.get('Address'), '10.44.0.3/24,fd44::3/64');
  assert.deepEqual(await users(portal), ['alice']);
  const names = (await configurationsOf(portal, 'alice')).map((entry) => entry.display_name).sort();
  assert.deepEqual(names, ['Laptop', 'Phone']);
});

test('an unknown profile answers 404 naming it and the known profiles, and an ill-formed profile_id 400; neither creates the user', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const unknown = await create(portal, { user_id: 'alice', profile_id: 'students' });
  assert.equal(unknown.status, 404);
  // The reference's text, then the profile asked for and the profiles there are.
  assert.equal(errorBody(unknown.text), 'no such "profile_id": "students"; known profiles: employees');

  for (const profileId of ['emp_loyees', 'employees ', 'a/b', '', 'émployees']) {
    const invalid = await create(portal, { user_id: 'alice', profile_id: profileId });
    assert.equal(invalid.status, 400, JSON.stringify(profileId));
    assert.equal(errorBody(invalid.text), 'invalid value for "profile_id"');
  }
  assert.deepEqual(await users(portal), []);
});

test('display_name defaults to "Admin API" and must be 1 to 64 characters, a multibyte character counting once', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const accepted = ['x'.repeat(64), 'é'.repeat(64), '🙂'.repeat(64), 'Alice’s laptop', 'a'];
  for (const displayName of accepted) {
    const response = await create(portal, { user_id: 'alice', profile_id: 'employees', display_name: displayName });
    assert.equal(response.status, 200, `${[...displayName].length} characters`);
  }
  const listed = (await configurationsOf(portal, 'alice')).map((entry) => entry.display_name).sort();
  assert.deepEqual(listed, [...accepted].sort());

  for (const displayName of ['x'.repeat(65), 'é'.repeat(65), '🙂'.repeat(65), '']) {
    const response = await create(portal, { user_id: 'bob', profile_id: 'employees', display_name: displayName });
    assert.equal(response.status, 400, `${[...displayName].length} characters`);
    assert.equal(errorBody(response.text), 'invalid value for "display_name"');
  }
  assert.deepEqual(await users(portal), ['alice']);
});

test('user_id must be 1 to 255 characters, a multibyte character counting once', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const long = 'u'.repeat(255);
  const multibyte = 'ü'.repeat(255);
  for (const userId of [long, multibyte, 'alice@example.org', 'first last']) {
    const response = await create(portal, { user_id: userId, profile_id: 'employees' });
    assert.equal(response.status, 200, `${[...userId].length} characters`);
  }
  assert.deepEqual(await users(portal), ['alice@example.org', 'first last', long, multibyte].sort());

  for (const userId of ['u'.repeat(256), 'ü'.repeat(256), '']) {
    const response = await create(portal, { user_id: userId, profile_id: 'employees' });
    assert.equal(response.status, 400, `${[...userId].length} characters`);
    assert.equal(errorBody(response.text), 'invalid value for "user_id"');
  }
  assert.equal((await users(portal)).length, 4);
});

test('prefer_tcp accepts exactly "yes" and "no"', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  for (const preferTcp of ['yes', 'no']) {
    const response = await create(portal, { user_id: 'alice', profile_id: 'employees', prefer_tcp: preferTcp });
    assert.equal(response.status, 200, preferTcp);
    // The profile offers WireGuard over UDP only, so preferring TCP still yields it.
    assert.equal(response.headers['content-type'], WIREGUARD);
  }
  for (const preferTcp of ['YES', 'No', 'true', '1', 'on', '']) {
    const response = await create(portal, { user_id: 'alice', profile_id: 'employees', prefer_tcp: preferTcp });
    assert.equal(response.status, 400, JSON.stringify(preferTcp));
    assert.equal(errorBody(response.text), 'invalid value for "prefer_tcp"');
  }
  assert.equal((await configurationsOf(portal, 'alice')).length, 2);
});

test('expires_in: sessionExpiry and each supportedSessionExpiry entry set the real expiry, in the header and the listing', async (t) => {
  const portal = await startTestPortal({
    clock: fixedClock,
    config: { sessionExpiry: 'P90D', supportedSessionExpiry: ['PT12H', 'P1Y'] },
  });
  t.after(() => portal.close());

  const cases: { expiresIn: string | undefined; atom: string; header: string }[] = [
    { expiresIn: undefined, atom: '2026-05-01T10:00:00+00:00', header: 'Fri, 01 May 2026 10:00:00 GMT' },
    { expiresIn: 'P90D', atom: '2026-05-01T10:00:00+00:00', header: 'Fri, 01 May 2026 10:00:00 GMT' },
    { expiresIn: 'PT12H', atom: '2026-01-31T22:00:00+00:00', header: 'Sat, 31 Jan 2026 22:00:00 GMT' },
    { expiresIn: 'P1Y', atom: '2027-01-31T10:00:00+00:00', header: 'Sun, 31 Jan 2027 10:00:00 GMT' },
  ];
  for (const [index, { expiresIn, atom, header }] of cases.entries()) {
    const userId = `device-${index}`;
    const form: Record<string, string> = { user_id: userId, profile_id: 'employees' };
    if (expiresIn !== undefined) form['expires_in'] = expiresIn;
    const response = await create(portal, form);
    assert.equal(response.status, 200, expiresIn);
    assert.equal(response.headers['expires'], header, expiresIn);

    const [entry] = await configurationsOf(portal, userId);
    assert.match(entry?.expires_at ?? '', ATOM);
    assert.equal(entry?.expires_at, atom, expiresIn);
    assert.equal(new Date(entry?.expires_at ?? '').getTime(), new Date(response.headers['expires'] ?? '').getTime());
  }
});

test("user_configuration_list shows a user's configurations latest expiry first, each with its own expiry", async (t) => {
  const portal = await startTestPortal({
    clock: fixedClock,
    config: { sessionExpiry: 'P90D', supportedSessionExpiry: ['PT12H', 'P1Y'] },
  });
  t.after(() => portal.close());

  for (const [displayName, expiresIn] of [
    ['day', 'PT12H'],
    ['year', 'P1Y'],
    ['quarter', 'P90D'],
  ] as const) {
    const response = await create(portal, {
      user_id: 'alice',
      profile_id: 'employees',
      display_name: displayName,
      expires_in: expiresIn,
    });
    assert.equal(response.status, 200);
  }
  const listed = await configurationsOf(portal, 'alice');
  assert.deepEqual(
    listed.map((entry) => [entry.display_name, entry.expires_at]),
    [
      ['year', '2027-01-31T10:00:00+00:00'],
      ['quarter', '2026-05-01T10:00:00+00:00'],
      ['day', '2026-01-31T22:00:00+00:00'],
    ],
  );
});

test('expires_in outside the configured values answers 400 naming them; text that is no duration is invalid, with the form expected', async (t) => {
  const portal = await startTestPortal({ config: { sessionExpiry: 'P90D', supportedSessionExpiry: ['PT12H', 'P1Y'] } });
  t.after(() => portal.close());

  // Valid durations, even equal in length to an allowed one, but not byte-identical to one.
  for (const expiresIn of ['P30D', 'P3M', 'PT2160H', 'P12M', 'P0Y90D']) {
    const response = await create(portal, { user_id: 'alice', profile_id: 'employees', expires_in: expiresIn });
    assert.equal(response.status, 400, expiresIn);
    const message = errorBody(response.text);
    assert.match(message, /"expires_in" is not supported/);
    assert.match(message, /supportedSessionExpiry/);
    assert.match(message, /P90D, PT12H, P1Y/);
  }
  for (const expiresIn of ['90 days', 'p90d', 'P', 'PT', 'P1DT', '-P1D', 'P1.5D', '']) {
    const response = await create(portal, { user_id: 'alice', profile_id: 'employees', expires_in: expiresIn });
    assert.equal(response.status, 400, JSON.stringify(expiresIn));
    // The reference's text, then the value, the form expected and the durations allowed here.
    assert.equal(
      errorBody(response.text),
      `invalid value for "expires_in": ${JSON.stringify(expiresIn)} is not an ISO 8601 duration such as P30D; allowed here: P90D, PT12H, P1Y`,
    );
  }
  assert.deepEqual(await users(portal), []);
});

test('Accept negotiation: no header, wildcards, the exact type and q-value lists all yield WireGuard', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const accepted: (string | null)[] = [
    null,
    '*/*',
    'application/*',
    WIREGUARD,
    'APPLICATION/X-WireGuard-Profile',
    `${WIREGUARD}; charset=utf-8`,
    `application/x-openvpn-profile;q=0.9, ${WIREGUARD};q=0.5`,
    `text/html, ${WIREGUARD};q=0.1`,
    `text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8`,
    `application/x-wireguard+tcp-profile, ${WIREGUARD};q=0.2`,
  ];
  for (const [index, accept] of accepted.entries()) {
    const response = await create(portal, { user_id: `device-${index}`, profile_id: 'employees' }, accept);
    assert.equal(response.status, 200, String(accept));
    assert.equal(response.headers['content-type'], WIREGUARD, String(accept));
    assert.match(response.text, /^\[Interface\]\n/);
  }
  assert.equal((await users(portal)).length, accepted.length);
});

test('Accept with only formats this profile cannot serve answers 406 JSON and creates nothing', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const refused = [
    'application/x-openvpn-profile',
    'application/x-wireguard+tcp-profile',
    'text/html',
    'text/*',
    'application/x-openvpn-profile, application/x-wireguard+tcp-profile',
    `${WIREGUARD};q=0`,
    `${WIREGUARD};q=0, */*`,
    `${WIREGUARD};q=0.000`,
  ];
  for (const accept of refused) {
    const response = await create(portal, { user_id: 'alice', profile_id: 'employees' }, accept);
    assert.equal(response.status, 406, accept);
    assert.match(response.headers['content-type'] ?? '', /^application\/json/);
    const message = errorBody(response.text);
    assert.match(
      message,
      /^no common VPN protocol \[CLIENT=.+ SERVER=application\/x-wireguard-profile,application\/x-apple-aspen-config\]$/,
      accept,
    );
  }
  assert.deepEqual(await users(portal), []);
  assert.equal((await portal.portal.ctx.db.selectFrom('wg_peers').select('public_key').execute()).length, 0);
});

test('missing and repeated parameters answer 400 with the reference messages', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const cases: { body: string; message: string }[] = [
    { body: '', message: 'missing post parameter "user_id"' },
    { body: 'profile_id=employees', message: 'missing post parameter "user_id"' },
    { body: 'user_id=alice', message: 'missing post parameter "profile_id"' },
    { body: 'user_id=a&user_id=b&profile_id=employees', message: 'value of post parameter "user_id" MUST be string' },
    { body: 'user_id[]=a&profile_id=employees', message: 'value of post parameter "user_id" MUST be string' },
    {
      body: 'user_id=alice&profile_id=employees&profile_id=employees',
      message: 'value of post parameter "profile_id" MUST be string',
    },
    {
      body: 'user_id=alice&profile_id=employees&display_name=a&display_name=b',
      message: 'value of post parameter "display_name" MUST be string',
    },
  ];
  for (const { body, message } of cases) {
    const response = await create(portal, body);
    assert.equal(response.status, 400, body);
    assert.equal(errorBody(response.text), message, body);
  }
  // Query-string parameters are not form parameters.
  const inQuery = await portal.request('/create?user_id=alice&profile_id=employees', {
    method: 'POST',
    headers: { authorization: `Bearer ${portal.secret}` },
  });
  assert.equal(inQuery.status, 400);
  assert.equal(errorBody(inQuery.text), 'missing post parameter "user_id"');
  assert.deepEqual(await users(portal), []);
});

test('a disabled user gets 403 "user is disabled" from create, and nothing is created or allocated', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  assert.equal((await create(portal, { user_id: 'alice', profile_id: 'employees' })).status, 200);
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);

  const refused = await create(portal, { user_id: 'alice', profile_id: 'employees' });
  assert.equal(refused.status, 403);
  assert.equal(refused.text, '{"error":"user is disabled"}');
  assert.equal((await configurationsOf(portal, 'alice')).length, 1);

  // After enable_user the next configuration gets the next address: the refused one took none.
  assert.equal((await portal.post('/enable_user', { user_id: 'alice' })).status, 204);
  const again = await create(portal, { user_id: 'alice', profile_id: 'employees' });
  assert.equal(again.status, 200);
  assert.equal(parseWireGuardFile(again.text).interface.get('Address'), '10.44.0.3/24,fd44::3/64');
  assert.equal((await configurationsOf(portal, 'alice')).length, 2);
});

test("the profile's options shape the file: split tunnel, exclusions, DNS placeholders, MTU, keep-alive, IPv6 endpoint", async (t) => {
  const portal = await startTestPortal({
    config: {
      WireGuard: { listenPort: 51821, setMtu: 1392 },
      ProfileList: [
        {
          profileId: 'office',
          displayName: 'Office',
          hostName: '2001:db8::1',
          defaultGateway: false,
          routeList: ['192.168.1.0/24', 'fd11::/64'],
          excludeRouteList: ['192.168.1.5/32'],
          dnsServerList: ['@GW4@', '@GW6@'],
          dnsSearchDomainList: ['example.org', 'example.org', 'b.example'],
          wKeepAlive: true,
          wRangeFour: '10.42.42.0/24',
          wRangeSix: 'fd42::/64',
          nodeUrl: 'http://127.0.0.1:2',
        },
      ],
    },
  });
  t.after(() => portal.close());

  const response = await create(portal, { user_id: 'alice', profile_id: 'office' });
  assert.equal(response.status, 200);
  const privateKey = parseWireGuardFile(response.text).interface.get('PrivateKey');
  const serverKey = portal.portal.ctx.keys.wireGuardPublicKey(0 as NodeNumber);
  // The reference's worked example (§6.3), line for line.
  assert.equal(
    response.text,
    [
      '[Interface]',
      'MTU = 1392',
      `PrivateKey = ${privateKey}`,
      'Address = 10.42.42.2/24,fd42::2/64',
      'DNS = 10.42.42.1,fd42::1,example.org,b.example',
      '',
      '[Peer]',
      `PublicKey = ${serverKey}`,
      'AllowedIPs = 10.42.42.0/24,192.168.1.0/30,192.168.1.4/32,192.168.1.6/31,192.168.1.8/29,192.168.1.16/28,192.168.1.32/27,192.168.1.64/26,192.168.1.128/25,fd11::/64,fd42::/64',
      'PersistentKeepalive = 25',
      'Endpoint = [2001:db8::1]:51821',
      '',
    ].join('\n'),
  );
});
