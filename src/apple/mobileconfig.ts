// The Apple configuration profile (`.mobileconfig`, `application/x-apple-aspen-config`) for
// WireGuard over UDP: an XML property list holding one `com.apple.vpn.managed` payload that
// the WireGuard app turns into a tunnel (format: WireGuard/wireguard-apple MOBILECONFIG.md,
// reference §7.2). An MDM pushes it to managed iPhones, iPads and Macs without user action.
// Built with the plist library, so every string is escaped by the XML writer. Pure: signing
// (profile-signing.ts) wraps the result when the portal has a signing certificate.
import { build } from 'plist';
import type { ProfileId, WireGuardKey } from '../shared/ids.js';
import type { ApplePlatform } from '../shared/platforms.js';
import { isIpAddress } from '../net/ip-prefix.js';
import {
  renderWireGuardClientConfig,
  wireGuardEndpoint,
  type WireGuardClientConfiguration,
  type WireGuardClientProfile,
} from '../wireguard/client-config.js';
import { nameBasedUuid } from './name-based-uuid.js';
import { sha256Hex } from '../shared/sha256.js';

/** The profile side: who issues it and the WireGuard settings of the chosen node. */
export interface AppleProfileSettings {
  /** Host name of the portal (`baseUrl`): the reverse-DNS root of PayloadIdentifier. */
  readonly portalHost: string;
  readonly profileId: ProfileId;
  readonly profileDisplayName: string;
  /** Rendered for UDP whatever `proxyEndpoint` says: the WireGuard app has no ProxyGuard. */
  readonly wireGuard: WireGuardClientProfile;
}

/**
 * Whose tunnel the profile installs: the seed of PayloadIdentifier and both PayloadUUIDs. A
 * device installs a profile with the same identifiers as a replacement of the one it has, so
 * equal seeds mean "the same tunnel". Today every configuration is its own tunnel (its public
 * key); a device's id will let re-issues for one device keep its identifiers.
 */
export type AppleProfileIdentity =
  | { readonly kind: 'configuration'; readonly publicKey: WireGuardKey }
  | { readonly kind: 'device'; readonly deviceId: string };

/** "Always on" for WireGuard: on-demand rules (VPNType AlwaysOn is IKEv2 only). */
export interface AppleOnDemand {
  /** Wi-Fi networks where the tunnel is not needed (disconnects); none: no SSID rule. */
  readonly trustedSsids: readonly string[];
  /** An https URL that answers 200 only inside the trusted network; null: no probe rule. */
  readonly probeUrl: string | null;
}

/** The configuration side: one issued configuration. */
export interface AppleConfigurationSettings {
  readonly identity: AppleProfileIdentity;
  /** The configuration's display_name. */
  readonly displayName: string;
  /** With the private key: a profile without one is no use to the WireGuard app. */
  readonly wireGuard: WireGuardClientConfiguration & { readonly privateKey: WireGuardKey };
  /** Which WireGuard app provides the tunnel. */
  readonly platform: ApplePlatform;
  /** null: no on-demand rules (the user connects by hand). */
  readonly onDemand: AppleOnDemand | null;
}

/**
 * Bundle identifier of the WireGuard app, the provider of the tunnel (`VPNSubType`, wireguard-apple
 * MOBILECONFIG.md): the iOS app also serves iPadOS, the macOS app is another bundle.
 */
export const WIREGUARD_BUNDLE_IDS: Readonly<Record<ApplePlatform, string>> = {
  ios: 'com.wireguard.ios',
  macos: 'com.wireguard.macos',
};

/**
 * Namespace of every PayloadUUID this portal derives (RFC 9562 name-based UUIDs). Fixed
 * forever: changing it would give every existing configuration a new identity on devices.
 */
const PAYLOAD_UUID_NAMESPACE = '960FA27E-84D2-43E5-A1B6-8E377DBFD98F';

/** Characters XML 1.0 cannot carry even escaped; a display name may contain them. */
const NOT_XML_CHARACTERS =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point: they are replaced.
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

export function renderAppleMobileconfig(
  profile: AppleProfileSettings,
  configuration: AppleConfigurationSettings,
): string {
  const wgQuickConfig = renderWireGuardClientConfig(
    { ...profile.wireGuard, proxyEndpoint: null },
    configuration.wireGuard,
  );
  const tunnelName = xmlSafe(`${profile.profileDisplayName} (${configuration.displayName})`);
  const seed = identitySeed(profile.profileId, configuration.identity);
  const identifier = payloadIdentifier(profile.portalHost, profile.profileId, seed);

  return build({
    PayloadDisplayName: tunnelName,
    PayloadType: 'Configuration',
    PayloadVersion: 1,
    PayloadIdentifier: identifier,
    PayloadUUID: nameBasedUuid(PAYLOAD_UUID_NAMESPACE, `${seed}#profile`),
    PayloadContent: [
      {
        PayloadDisplayName: 'VPN',
        PayloadType: 'com.apple.vpn.managed',
        PayloadVersion: 1,
        PayloadIdentifier: `${identifier}.wireguard`,
        PayloadUUID: nameBasedUuid(PAYLOAD_UUID_NAMESPACE, `${seed}#vpn`),
        UserDefinedName: tunnelName,
        VPNType: 'VPN',
        VPNSubType: WIREGUARD_BUNDLE_IDS[configuration.platform],
        VendorConfig: { WgQuickConfig: wgQuickConfig },
        VPN: {
          RemoteAddress: wireGuardEndpoint(profile.wireGuard.hostName, profile.wireGuard.listenPort),
          AuthenticationMethod: 'Password',
          ...(configuration.onDemand === null
            ? {}
            : { OnDemandEnabled: 1, OnDemandRules: onDemandRules(configuration.onDemand) }),
        },
      },
    ],
  });
}

/**
 * Evaluated in order, the first match wins: trusted Wi-Fi names, then the probe (both
 * disconnect: the network is trusted), then connect everywhere else.
 */
function onDemandRules(onDemand: AppleOnDemand): Record<string, string | string[]>[] {
  return [
    ...(onDemand.trustedSsids.length === 0
      ? []
      : [{ Action: 'Disconnect', InterfaceTypeMatch: 'WiFi', SSIDMatch: onDemand.trustedSsids.map(xmlSafe) }]),
    ...(onDemand.probeUrl === null ? [] : [{ Action: 'Disconnect', URLStringProbe: onDemand.probeUrl }]),
    { Action: 'Connect' },
  ];
}

/**
 * A configuration's seed is its public key, as it always was (so identifiers already on devices
 * stay what they are); a device's seed names the profile too, since one device may hold a
 * tunnel of each profile.
 */
function identitySeed(profileId: ProfileId, identity: AppleProfileIdentity): string {
  return identity.kind === 'configuration' ? identity.publicKey : `device:${profileId}:${identity.deviceId}`;
}

/**
 * Reverse-DNS of the portal host, then the profile, then a short hash of the identity's seed:
 * stable for one configuration (installing it again replaces it on the device) and distinct
 * for two configurations of the same user and profile (both can live on one device).
 */
function payloadIdentifier(portalHost: string, profileId: ProfileId, seed: string): string {
  const host = portalHost.replace(/^\[|\]$/g, '');
  const labels = isIpAddress(host) ? [host] : host.split('.').reverse();
  const root = labels.map((label) => label.replace(/[^A-Za-z0-9-]/g, '-')).filter((label) => label !== '');
  const shortHash = sha256Hex(seed).slice(0, 12);
  return [...root, profileId, shortHash].join('.');
}

function xmlSafe(text: string): string {
  return text.replace(NOT_XML_CHARACTERS, '\uFFFD');
}
