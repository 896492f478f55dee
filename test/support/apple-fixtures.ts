// One WireGuard profile and configurations of it, as the Apple renderer takes them: shared by
// the renderer's tests and the check against Apple's schema.
import type { AppleConfigurationSettings, AppleProfileSettings } from '../../src/apple/mobileconfig.js';
import { asProfileId } from '../../src/shared/ids.js';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';

const server = generateWireGuardKeyPair();

export const exampleAppleProfile: AppleProfileSettings = {
  portalHost: 'vpn.example.org',
  profileId: asProfileId('employees'),
  profileDisplayName: 'Employees',
  wireGuard: {
    hostName: 'vpn1.example.org',
    listenPort: 51820,
    mtu: 1392,
    serverPublicKey: server.publicKey,
    rangeFour: '10.42.42.0/24',
    rangeSix: 'fd42::/64',
    defaultGateway: true,
    dnsServerList: ['@GW4@', '@GW6@'],
    dnsSearchDomainList: ['example.org'],
    routeList: [],
    excludeRouteList: [],
    keepAlive: true,
    // Set on purpose: the Apple profile is always WireGuard over UDP.
    proxyEndpoint: 'https://vpn.example.org/proxyguard/vpn1.example.org',
  },
};

/** A configuration with a new key pair; iOS, no on-demand rules unless `options` say otherwise. */
export function exampleAppleConfiguration(
  displayName: string,
  options: Partial<AppleConfigurationSettings> = {},
): AppleConfigurationSettings {
  const keys = generateWireGuardKeyPair();
  return {
    identity: { kind: 'configuration', publicKey: keys.publicKey },
    displayName,
    wireGuard: { privateKey: keys.privateKey, ipFour: '10.42.42.7', ipSix: 'fd42::7' },
    platform: 'ios',
    onDemand: null,
    ...options,
  };
}
