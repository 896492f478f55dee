// What the agent translates: with `"nat": true` it masquerades every client range of its node,
// taken from the server configuration the real portal hands it (WireGuard ranges from the
// interface addresses, OpenVPN ranges from each process's server file), as one nftables table;
// with deterministic NAT it maps each client IPv4 address to its block instead.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientRanges, natRuleset } from '../../src/agent/nat.js';
import { readNodeKey } from '../../src/agent/node-key.js';
import { PortalClient } from '../../src/agent/portal-client.js';
import { DeterministicNat } from '../../src/net/deterministic-nat.js';
import { formatIpPrefix, parseIpPrefix } from '../../src/net/ip-prefix.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { startTestPortal } from '../support/test-portal.js';

test('the masqueraded ranges are the WireGuard and every OpenVPN process range of the node, IPv4 and IPv6', async (t) => {
  const portal = await startTestPortal({
    config: {
      ProfileList: [
        {
          profileId: 'wg',
          displayName: 'WG',
          hostName: 'vpn.example.org',
          wRangeFour: '10.44.0.0/24',
          wRangeSix: 'fd44::/64',
          nodeUrl: 'http://127.0.0.1:2',
        },
        {
          profileId: 'ovpn',
          displayName: 'OpenVPN',
          hostName: 'vpn.example.org',
          oRangeFour: '10.20.0.0/24',
          oRangeSix: 'fd20::/64',
          oUdpPortList: [1194],
          oTcpPortList: [1194],
          nodeUrl: 'http://127.0.0.1:2',
        },
      ],
    },
  });
  t.after(portal.close);
  const { key } = await readNodeKey(portal.portal.ctx.keys.nodeKeyPath(asNodeNumber(0)));
  const client = new PortalClient({
    apiUrl: new URL(portal.nodeApiUrl),
    nodeNumber: asNodeNumber(0),
    nodeKey: key,
    profileIdList: [],
    openVpn: { user: 'nobody', group: 'nogroup', preferAes: true, managementDir: '/run/vpn-portal-node/openvpn' },
  });
  const ranges = clientRanges(await client.fetchServerConfig()).map(formatIpPrefix);
  assert.deepEqual(
    ranges.sort(),
    ['10.20.0.0/25', '10.20.0.128/25', '10.44.0.0/24', 'fd20::/112', 'fd20::1:0/112', 'fd44::/64'].sort(),
  );

  const ruleset = natRuleset(clientRanges(await client.fetchServerConfig()));
  assert.match(ruleset, /^delete table inet vpn_portal_nat$/m, 'replaced atomically');
  assert.match(
    ruleset,
    /ip saddr \{ 10\.44\.0\.0\/24, 10\.20\.0\.0\/25, 10\.20\.0\.128\/25 \} ip daddr != \{ [^}]+ \} masquerade/,
  );
  assert.match(ruleset, /ip6 saddr \{ fd44::\/64, fd20::\/112, fd20::1:0\/112 \} ip6 daddr != \{ [^}]+ \} masquerade/);
});

test('with deterministic nat the table maps each client IPv4 address to its block and leaves IPv6 routed', () => {
  const ranges = ['10.44.0.0/29', 'fd44::/64', '10.20.0.0/30'].map(parseIpPrefix);
  const mapping = new DeterministicNat({
    ranges: ranges.map(formatIpPrefix),
    publicAddresses: ['192.0.2.11', '192.0.2.10'],
    portsPerClient: 21_504,
  });
  const ruleset = natRuleset(ranges, mapping);
  assert.match(ruleset, /^delete table inet vpn_portal_nat$/m, 'replaced atomically');
  assert.match(ruleset, /type ipv4_addr : interval ipv4_addr \. inet_service/);
  // 10.20.0.0/30 has one client, 10.44.0.0/29 five; three blocks per address.
  const elements = [...ruleset.matchAll(/(\S+) : (\S+) \. (\d+)-(\d+)/g)].map((match) => match.slice(1).join(' '));
  assert.deepEqual(elements, [
    '10.20.0.2 192.0.2.10 1024 22527',
    '10.44.0.2 192.0.2.10 22528 44031',
    '10.44.0.3 192.0.2.10 44032 65535',
    '10.44.0.4 192.0.2.11 1024 22527',
    '10.44.0.5 192.0.2.11 22528 44031',
    '10.44.0.6 192.0.2.11 44032 65535',
  ]);
  assert.match(
    ruleset,
    /ip saddr \{ [^}]+ \} ip daddr != \{ [^}]+ \} meta l4proto \{ tcp, udp, icmp \} snat ip to ip saddr map @client_block/,
  );
  assert.match(
    ruleset,
    /ip saddr \{ [^}]+ \} ip daddr != \{ [^}]+ \} counter drop/,
    'nothing else leaves untranslated',
  );
  assert.doesNotMatch(ruleset, /ip6|masquerade/, 'IPv6 is routed, not translated');
});
