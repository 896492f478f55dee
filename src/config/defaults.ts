// The embedded default configuration: what `vpn-portal serve` uses without --config.
// One WireGuard profile on private ranges, a node agent expected on the same host.
import type { PortalConfigFile } from './schema.js';

export const embeddedDefaultConfig: PortalConfigFile = {
  listen: { host: '127.0.0.1', port: 8080 },
  dataDir: './data',
  ProfileList: [
    {
      profileId: 'default',
      displayName: 'Default',
      hostName: 'localhost',
      wRangeFour: '10.43.43.0/24',
      wRangeSix: 'fd43::/64',
      dnsServerList: ['9.9.9.9', '2620:fe::fe'],
      nodeUrl: 'http://127.0.0.1:41194',
    },
  ],
};
