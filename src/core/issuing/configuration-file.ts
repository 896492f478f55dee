// The file `create` answers for a WireGuard configuration, in the format the negotiation chose:
// the wg-quick file for UDP (reference §6.3), its ProxyGuard variant for TCP (§7.1), or the
// Apple configuration profile (signed when the portal has a signing certificate). Pure apart
// from the signature: the same inputs always give the same bytes.
import { renderAppleMobileconfig, type AppleOnDemand } from '../../apple/mobileconfig.js';
import { signProfile, type ProfileSigningMaterial } from '../../apple/profile-signing.js';
import type { ApplePlatform } from '../../shared/platforms.js';
import type { WireGuardProxy } from '../../config/portal-config.js';
import type { ProfileId, WireGuardKey } from '../../shared/ids.js';
import type { ConfigFormat } from './protocol-selection.js';
import {
  renderWireGuardClientConfig,
  type WireGuardClientConfiguration,
  type WireGuardClientProfile,
} from '../../wireguard/client-config.js';
import { proxyEndpointUrl } from '../../wireguard/proxy-endpoint.js';

/** The formats a WireGuard configuration can be written in. */
export type WireGuardFileFormat = Extract<ConfigFormat, 'wireguard' | 'wireguard+tcp' | 'apple'>;

export interface WireGuardFileProfile {
  readonly portalBaseUrl: URL;
  readonly proxy: WireGuardProxy;
  readonly profileId: ProfileId;
  readonly profileDisplayName: string;
  /** The node's WireGuard settings; `proxyEndpoint` is decided here, per format. */
  readonly wireGuard: Omit<WireGuardClientProfile, 'proxyEndpoint'>;
}

export interface WireGuardFileConfiguration {
  readonly publicKey: WireGuardKey;
  readonly displayName: string;
  readonly wireGuard: WireGuardClientConfiguration;
}

/** What only the Apple profile needs: which app, on-demand rules, and the signer. */
export interface AppleFileOptions {
  readonly platform: ApplePlatform;
  /** null: no on-demand rules. */
  readonly onDemand: AppleOnDemand | null;
  /** null: the profile goes out as the plain property list. */
  readonly signing: ProfileSigningMaterial | null;
  readonly signedAt: Date;
  /**
   * The registered device the profile is for: its identifiers then follow the device and the
   * profile, so a re-issue replaces the tunnel on the device; null: they follow the configuration.
   */
  readonly deviceId: string | null;
}

export interface ConfigurationFile {
  /** Text, or bytes for a signed Apple profile (DER). */
  readonly body: string | Uint8Array;
  /** Set when the file is meant to be saved under a name (`Content-Disposition: attachment`). */
  readonly downloadFileName: string | null;
}

export async function renderWireGuardFile(
  format: WireGuardFileFormat,
  profile: WireGuardFileProfile,
  configuration: WireGuardFileConfiguration,
  apple: AppleFileOptions,
): Promise<ConfigurationFile> {
  switch (format) {
    case 'wireguard':
      return {
        body: renderWireGuardClientConfig({ ...profile.wireGuard, proxyEndpoint: null }, configuration.wireGuard),
        downloadFileName: null,
      };
    case 'wireguard+tcp': {
      const proxyEndpoint = proxyEndpointUrl({
        proxyUrl: profile.proxy.enabled ? profile.proxy.proxyUrl : null,
        portalBaseUrl: profile.portalBaseUrl,
        hostName: profile.wireGuard.hostName,
      });
      return {
        body: renderWireGuardClientConfig({ ...profile.wireGuard, proxyEndpoint }, configuration.wireGuard),
        downloadFileName: null,
      };
    }
    case 'apple': {
      const { privateKey } = configuration.wireGuard;
      // The negotiation never offers the Apple profile for a device-held key (offeredFormats).
      if (privateKey === null) throw new Error('an Apple profile needs the private key');
      const plist = renderAppleMobileconfig(
        {
          portalHost: profile.portalBaseUrl.hostname,
          profileId: profile.profileId,
          profileDisplayName: profile.profileDisplayName,
          wireGuard: { ...profile.wireGuard, proxyEndpoint: null },
        },
        {
          identity:
            apple.deviceId === null
              ? { kind: 'configuration', publicKey: configuration.publicKey }
              : { kind: 'device', deviceId: apple.deviceId },
          displayName: configuration.displayName,
          wireGuard: { ...configuration.wireGuard, privateKey },
          platform: apple.platform,
          onDemand: apple.onDemand,
        },
      );
      return {
        body: apple.signing === null ? plist : await signProfile(plist, apple.signing, apple.signedAt),
        downloadFileName: mobileconfigFileName(profile.profileId),
      };
    }
  }
}

/**
 * `<profileId>.mobileconfig`. Profile ids are already `[a-zA-Z0-9-.]+`; anything else, and a
 * leading dot (a hidden file), is replaced anyway, since the name ends up in a header and on disk.
 */
export function mobileconfigFileName(profileId: ProfileId): string {
  const safe = profileId.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\./, '_');
  return `${safe}.mobileconfig`;
}
