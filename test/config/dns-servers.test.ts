// A split-tunnel profile with DNS servers but no search domains: the reference's rule drops the
// servers from every client file, so the portal says so at start, once, naming the profile.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { droppedDnsServerWarnings } from '../../src/config/dns-servers.js';
import { resolvePortalConfig } from '../../src/config/load.js';
import { capturedLog } from '../support/captured-log.js';
import { startTestPortal } from '../support/test-portal.js';

const base = { hostName: 'vpn.example.org', wRangeFour: '10.44.0.0/24', wRangeSix: 'fd44::/64' };
const splitWithServers = {
  ...base,
  profileId: 'office',
  displayName: 'Office',
  defaultGateway: false,
  dnsServerList: ['10.1.1.53'],
  routeList: ['10.1.0.0/16'],
};

test('only a split-tunnel profile with DNS servers and no search domains is named', () => {
  const config = resolvePortalConfig(
    {
      dataDir: '/var/lib/vpn-portal',
      ProfileList: [
        splitWithServers,
        {
          ...base,
          profileId: 'full',
          displayName: 'Full',
          wRangeFour: '10.45.0.0/24',
          wRangeSix: 'fd45::/64',
          dnsServerList: ['9.9.9.9'],
        },
        {
          ...splitWithServers,
          profileId: 'searched',
          wRangeFour: '10.46.0.0/24',
          wRangeSix: 'fd46::/64',
          dnsSearchDomainList: ['corp.example.org'],
        },
        {
          ...splitWithServers,
          profileId: 'silent',
          wRangeFour: '10.47.0.0/24',
          wRangeSix: 'fd47::/64',
          dnsServerList: [],
        },
      ],
    },
    'portal.json',
  );
  const warnings = droppedDnsServerWarnings(config.profiles);
  assert.equal(warnings.length, 1);
  assert.match(
    warnings[0] ?? '',
    /^profile "office": its dnsServerList is not sent to clients, because it is a split tunnel \(defaultGateway false\) without dnsSearchDomainList: /,
  );
  assert.match(warnings[0] ?? '', /the reference portal's rule/);
});

test('the portal warns at start, once, about the profile whose DNS servers its clients never get', async (t) => {
  const log = capturedLog('warn');
  const portal = await startTestPortal({ config: { ProfileList: [splitWithServers] }, logger: log.logger });
  t.after(portal.close);
  // A file issued: the warning is not repeated per configuration.
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'office' })).status, 200);
  const warnings = log.lines().filter((line) => line.level === 40 && String(line.msg).includes('dnsServerList'));
  assert.equal(warnings.length, 1, log.text());
  assert.match(String(warnings[0]?.msg), /^profile "office": /);
});
