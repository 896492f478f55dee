// GET /profiles (an extension): the profiles a key may use, with their protocols, tunnel and
// client ranges per node, so a profile_id is found without the portal's configuration; and the
// 404 of an unknown profile, which names the profiles the key may use.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BOTH_PROTOCOLS_PROFILE } from '../../support/device-keys.js';
import { bearer, makeAdminKey } from '../../support/admin-keys.js';
import { errorBody } from '../../support/raw-http.js';
import { runCli } from '../../support/portal-process.js';
import { startTestPortal, UNREACHABLE_NODE } from '../../support/test-portal.js';

const SPLIT = {
  profileId: 'office',
  displayName: 'Office',
  hostName: 'vpn.example.org',
  defaultGateway: false,
  routeList: ['10.1.0.0/16'],
  dnsSearchDomainList: ['corp.example.org'],
  dnsServerList: ['10.1.1.53'],
  wRangeFour: '10.70.0.0/24',
  wRangeSix: 'fd70::/64',
  nodeUrl: UNREACHABLE_NODE,
};

test('GET /profiles lists every profile for the secret, and only its own for a limited key', async (t) => {
  const portal = await startTestPortal({ config: { ProfileList: [BOTH_PROTOCOLS_PROFILE, SPLIT] } });
  t.after(() => portal.close());
  assert.deepEqual(await portal.admin.profiles(), [
    {
      profile_id: 'both',
      display_name: 'Both',
      vpn_proto_list: ['openvpn', 'wireguard'],
      default_gateway: true,
      ranges: [
        { node_number: 0, vpn_proto: 'wireguard', range_four: '10.62.0.0/24', range_six: 'fd62::/64' },
        { node_number: 0, vpn_proto: 'openvpn', range_four: '10.61.0.0/24', range_six: 'fd61::/64' },
      ],
    },
    {
      profile_id: 'office',
      display_name: 'Office',
      vpn_proto_list: ['wireguard'],
      default_gateway: false,
      ranges: [{ node_number: 0, vpn_proto: 'wireguard', range_four: '10.70.0.0/24', range_six: 'fd70::/64' }],
    },
  ]);
  const reader = await makeAdminKey(portal, 'reader', { scope: 'read', profiles: ['office'] });
  const limited = await portal.get('/profiles', {}, bearer(reader));
  assert.equal(limited.status, 200);
  assert.deepEqual(
    (limited.json() as { profiles: { profile_id: string }[] }).profiles.map((profile) => profile.profile_id),
    ['office'],
  );
});

test('the 404 of an unknown profile names it and lists only the profiles the key may use', async (t) => {
  const portal = await startTestPortal({ config: { ProfileList: [BOTH_PROTOCOLS_PROFILE, SPLIT] } });
  t.after(() => portal.close());
  const unknown = await portal.post('/create', { user_id: 'alice', profile_id: 'employes' });
  assert.equal(unknown.status, 404);
  assert.equal(errorBody(unknown.text), 'no such "profile_id": "employes"; known profiles: both, office');
  // A key limited to some profiles is refused (403) before the lookup: it learns nothing about the others.
  const writer = await makeAdminKey(portal, 'writer', { scope: 'write', profiles: ['office'] });
  const limited = await portal.post('/create', { user_id: 'alice', profile_id: 'employes' }, bearer(writer));
  assert.equal(limited.status, 403);
  assert.doesNotMatch(limited.text, /both/);
  assert.deepEqual(await portal.admin.users(), []);
});

test('vpn-portal admin profiles prints a table, or the JSON answer', async (t) => {
  const portal = await startTestPortal({ config: { ProfileList: [BOTH_PROTOCOLS_PROFILE, SPLIT] } });
  t.after(() => portal.close());
  const env = {
    VPN_PORTAL_URL: `${portal.portal.url}/vpn-user-portal/`,
    VPN_PORTAL_KEY_FILE: portal.portal.ctx.keys.adminApiKeyPath,
  };
  const table = await runCli(['admin', 'profiles'], { env });
  assert.equal(table.code, 0, table.stderr);
  assert.equal(
    table.stdout,
    [
      'PROFILE  DISPLAY_NAME  PROTOCOLS          TUNNEL  RANGES',
      'both     Both          openvpn,wireguard  full    node 0 wireguard 10.62.0.0/24 fd62::/64; node 0 openvpn 10.61.0.0/24 fd61::/64',
      'office   Office        wireguard          split   node 0 wireguard 10.70.0.0/24 fd70::/64',
      '',
    ].join('\n'),
  );
  const json = await runCli(['admin', 'profiles', '--json'], { env });
  assert.deepEqual(JSON.parse(json.stdout), { profiles: await portal.admin.profiles() });
});
