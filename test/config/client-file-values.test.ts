// The profile values every client file carries as they are written (hostName, dnsServerList,
// dnsSearchDomainList): one that clients would misread, or that would add lines of its own to
// the files, refuses the start naming the option, instead of reaching every device.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resolvePortalConfig } from '../../src/config/load.js';
import type { PortalConfigFile } from '../../src/config/schema.js';
import { problemsOf } from '../support/config-problems.js';

type ProfileFile = PortalConfigFile['ProfileList'][number];

function withProfile(overrides: Partial<ProfileFile>): Record<string, unknown> {
  const profile: ProfileFile = {
    profileId: 'employees',
    displayName: 'Employees',
    hostName: 'vpn.example.org',
    wRangeFour: '10.44.0.0/24',
    wRangeSix: 'fd44::/64',
    ...overrides,
  };
  return { dataDir: '/var/lib/vpn-portal', ProfileList: [profile] };
}

test('a hostName with a line break, a port or a space is refused: it would be pasted into Endpoint and remote lines', () => {
  // Written into `Endpoint = …:51820`, this adds a PostUp command that wg-quick runs as root.
  const injected = problemsOf(withProfile({ hostName: 'vpn.example.org\n[Interface]\nPostUp = touch /tmp/owned' }));
  assert.match(injected, /portal\.json: ProfileList\[0\]\.hostName: ".*" is not a host name or an IP address/);
  // `Endpoint = vpn.example.org:443:51820`, `remote vpn.example.org:443 1194 udp`: no client resolves that.
  assert.match(problemsOf(withProfile({ hostName: 'vpn.example.org:443' })), /ProfileList\[0\]\.hostName/);
  // `remote vpn.example.org 1194 1194 udp`: openvpn refuses the whole file.
  assert.match(problemsOf(withProfile({ hostName: 'vpn.example.org 1194' })), /hostName/);
  assert.match(problemsOf(withProfile({ hostName: 'https://vpn.example.org' })), /hostName/);
  assert.match(problemsOf(withProfile({ hostName: '[2001:db8::1]' })), /no port, scheme, brackets or spaces/);
});

test('a DNS server written as a name, or with anything after the address, is refused naming its entry', () => {
  // wg-quick and the WireGuard apps take a DNS entry that is no address for a search domain.
  const problems = problemsOf(withProfile({ dnsServerList: ['9.9.9.9', 'dns.example.org', '9.9.9.9\nPostUp = id'] }));
  assert.match(
    problems,
    /ProfileList\[0\]\.dnsServerList\[1\]: "dns\.example\.org" is not an IP address, @GW4@ or @GW6@/,
  );
  assert.match(problems, /ProfileList\[0\]\.dnsServerList\[2\]: "9\.9\.9\.9\\nPostUp = id" is not an IP address/);
  assert.doesNotMatch(problems, /dnsServerList\[0\]/);
});

test('a search domain with a space, a comma, a quote or a comment sign is refused naming its entry', () => {
  const problems = problemsOf(
    withProfile({ dnsSearchDomainList: ['corp.example', 'a.example b.example', 'a,b', 'x"y', 'corp#x', 'corp;x'] }),
  );
  for (const index of [1, 2, 3, 4, 5]) {
    assert.match(
      problems,
      new RegExp(`ProfileList\\[0\\]\\.dnsSearchDomainList\\[${index}\\]: .* is not a domain name`),
    );
  }
  assert.doesNotMatch(problems, /dnsSearchDomainList\[0\]/);
});

test('host names, IP addresses of both families, the gateway placeholders and ordinary domains still load', () => {
  const config = resolvePortalConfig(
    withProfile({
      hostName: ['vpn-1.example.org.', '192.0.2.7', '2001:db8::1', 'xn--bcher-kva.example', 'node_2.example.org'],
      onNode: [0, 1, 2, 3, 4],
      wRangeFour: ['10.44.0.0/24', '10.45.0.0/24', '10.46.0.0/24', '10.47.0.0/24', '10.48.0.0/24'],
      wRangeSix: ['fd44::/64', 'fd45::/64', 'fd46::/64', 'fd47::/64', 'fd48::/64'],
      nodeUrl: ['http://a:41194', 'http://b:41194', 'http://c:41194', 'http://d:41194', 'http://e:41194'],
      dnsServerList: ['@GW4@', '@GW6@', '9.9.9.9', '2620:fe::fe'],
      dnsSearchDomainList: ['corp.example', 'example.org.', 'lab'],
    }),
    'portal.json',
  );
  const [profile] = config.profiles;
  assert.deepEqual(
    profile?.nodes.map((node) => node.hostName),
    ['vpn-1.example.org.', '192.0.2.7', '2001:db8::1', 'xn--bcher-kva.example', 'node_2.example.org'],
  );
  assert.deepEqual(profile?.dnsServerList, ['@GW4@', '@GW6@', '9.9.9.9', '2620:fe::fe']);
});
