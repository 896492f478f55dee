// The Apple configuration profile (`.mobileconfig`, `application/x-apple-aspen-config`) for
// WireGuard over UDP: an XML property list holding one `com.apple.vpn.managed` payload that
// the WireGuard app turns into a tunnel (format: WireGuard/wireguard-apple MOBILECONFIG.md,
// reference §7.2). An MDM pushes it to managed iPhones, iPads and Macs without user action.
// Built with the plist library, so every string is escaped by the XML writer.
import { createHash } from 'node:crypto';
import { build } from 'plist';
import type { ProfileId, WireGuardKey } from '../shared/ids.js';
import { isIpAddress } from '../net/ip-prefix.js';
import { renderWireGuardClientConfig, wireGuardEndpoint, type WireGuardClientConfiguration, type WireGuardClientProfile } from '../wireguard/client-config.js';
import { nameBasedUuid } from './name-based-uuid.js';

/** The profile side: who issues it and the WireGuard settings of the chosen node. */
export interface AppleProfileSettings {
  /** Host name of the portal (`baseUrl`): the reverse-DNS root of PayloadIdentifier. */
  readonly portalHost: string;
  readonly profileId: ProfileId;
  readonly profileDisplayName: string;
  /** Rendered for UDP whatever `proxyEndpoint` says: the WireGuard app has no ProxyGuard. */
  readonly wireGuard: WireGuardClientProfile;
}

/** The configuration side: one issued configuration. */
export interface AppleConfigurationSettings {
  /** The configuration's public key (its connection_id): the seed of the stable identifiers. */
  readonly publicKey: WireGuardKey;
  /** The configuration's display_name. */
  readonly displayName: string;
  /** With the private key: a profile without one is no use to the WireGuard app. */
  readonly wireGuard: WireGuardClientConfiguration & { readonly privateKey: WireGuardKey };
}

/** Bundle identifier of the WireGuard app for iOS and iPadOS, the provider of the tunnel. */
export const WIREGUARD_IOS_BUNDLE_ID = 'com.wireguard.ios';

/**
 * Namespace of every PayloadUUID this portal derives (RFC 9562 name-based UUIDs). Fixed
 * forever: changing it would give every existing configuration a new identity on devices.
 */
const PAYLOAD_UUID_NAMESPACE = '960FA27E-84D2-43E5-A1B6-8E377DBFD98F';

/** Characters XML 1.0 cannot carry even escaped; a display name may contain them. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point: they are replaced.
const NOT_XML_CHARACTERS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

export function renderAppleMobileconfig(profile: AppleProfileSettings, configuration: AppleConfigurationSettings): string {
  const wgQuickConfig = renderWireGuardClientConfig({ ...profile.wireGuard, proxyEndpoint: null }, configuration.wireGuard);
  const tunnelName = xmlSafe(`${profile.profileDisplayName} (${configuration.displayName})`);
  const identifier = payloadIdentifier(profile.portalHost, profile.profileId, configuration.publicKey);

  return build({
    PayloadDisplayName: tunnelName,
    PayloadType: 'Configuration',
    PayloadVersion: 1,
    PayloadIdentifier: identifier,
    PayloadUUID: nameBasedUuid(PAYLOAD_UUID_NAMESPACE, `${configuration.publicKey}#profile`),
    PayloadContent: [
      {
        PayloadDisplayName: 'VPN',
        PayloadType: 'com.apple.vpn.managed',
        PayloadVersion: 1,
        PayloadIdentifier: `${identifier}.wireguard`,
        PayloadUUID: nameBasedUuid(PAYLOAD_UUID_NAMESPACE, `${configuration.publicKey}#vpn`),
        UserDefinedName: tunnelName,
        VPNType: 'VPN',
        VPNSubType: WIREGUARD_IOS_BUNDLE_ID,
        VendorConfig: { WgQuickConfig: wgQuickConfig },
        VPN: {
          RemoteAddress: wireGuardEndpoint(profile.wireGuard.hostName, profile.wireGuard.listenPort),
          AuthenticationMethod: 'Password',
        },
      },
    ],
  });
}

/**
 * Reverse-DNS of the portal host, then the profile, then a short hash of the public key:
 * stable for one configuration (installing it again replaces it on the device) and distinct
 * for two configurations of the same user and profile (both can live on one device).
 */
function payloadIdentifier(portalHost: string, profileId: ProfileId, publicKey: WireGuardKey): string {
  const host = portalHost.replace(/^\[|\]$/g, '');
  const labels = isIpAddress(host) ? [host] : host.split('.').reverse();
  const root = labels.map((label) => label.replace(/[^A-Za-z0-9-]/g, '-')).filter((label) => label !== '');
  const shortHash = createHash('sha256').update(publicKey).digest('hex').slice(0, 12);
  return [...root, profileId, shortHash].join('.');
}

function xmlSafe(text: string): string {
  return text.replace(NOT_XML_CHARACTERS, '\uFFFD');
}
