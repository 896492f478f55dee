// POST /create: makes the user when missing, then one configuration for a profile, in the
// first format the client accepts that the profile can serve (specification §4.6).
// Order: validate, write the database (the source of truth), then tell the node. The two
// ways of issuing are wireguard.ts and openvpn.ts, next to this file.
import { findProfile } from '../../config/portal-config.js';
import type { PortalContext } from '../context.js';
import type { ConfigurationFile } from './configuration-file.js';
import { deviceForIssue } from '../devices/index.js';
import { deviceKeysHint, formatsForDeviceKeys, readDeviceKeys } from './device-keys.js';
import { PortalError } from '../errors.js';
import { warningAlreadyPast, cappedExpiry, configurationExpiry } from '../expiry/index.js';
import { issueOpenVpn } from './openvpn.js';
import { issueWireGuard } from './wireguard.js';
import type { CreateConfigurationRequest, Issue, IssuedConfiguration } from './issue.js';
import { offeredFormats } from './offered-formats.js';
import { formatsForPlatform, platformHint } from './platform-formats.js';
import { assertProfileAllowed, noSuchProfile } from '../access/index.js';
import { chooseFormats, describeNoCommonFormat, MIME_TYPES } from './protocol-selection.js';

export type { CreateConfigurationRequest, IssuedConfiguration } from './issue.js';

export async function createConfiguration(
  ctx: PortalContext,
  request: CreateConfigurationRequest,
): Promise<IssuedConfiguration> {
  // Before the profile is looked up: a key limited to some profiles learns nothing about others.
  assertProfileAllowed(ctx, request.profileId);
  const profile = findProfile(ctx.config, request.profileId);
  if (profile === undefined) throw noSuchProfile(ctx, request.profileId);

  const device = request.device === undefined ? null : await deviceForIssue(ctx, request.device, request);
  // A device's platform is the default: a Mac's Apple profile is for the macOS app.
  const platform = request.platform ?? device?.platform;

  const now = ctx.clock.now();
  // The CA's end caps every configuration's expiry (reference §10), WireGuard ones too.
  const ca = await ctx.openVpnKeys.ca();
  const caCapped = cappedExpiry(configurationExpiry(ctx.config, now, request.expiresIn), ca?.notAfter ?? null);
  // A device enrolled with its MDM certificate: its configuration ends no later than the certificate.
  const certificateEnd = request.deviceCertificate === undefined ? null : new Date(request.deviceCertificate.notAfter);
  const expiresAt = cappedExpiry(caCapped, certificateEnd);
  const deviceKeys = await readDeviceKeys(request.publicKey, request.csr);
  const forKeys = formatsForDeviceKeys(offeredFormats(profile, ctx.config.wireGuard), deviceKeys);
  const offered = formatsForPlatform(forKeys, platform);
  const formats = chooseFormats(request.accept, offered, request.preferTcp);
  if (formats.length === 0) {
    throw new PortalError(
      'no-common-protocol',
      describeNoCommonFormat(request.accept, offered) + deviceKeysHint(deviceKeys) + platformHint(forKeys, platform),
    );
  }

  const issue: Issue = {
    request,
    profile,
    now,
    expiresAt,
    expiryWarned: warningAlreadyPast(ctx.config, now, expiresAt),
    deviceKeys,
    deviceId: device?.deviceId ?? null,
    platform,
  };
  // Formats are tried in order (reference §5.2): WireGuard fails over to OpenVPN when no node
  // has a free address. The WireGuard formats share one address pool, so one try covers them all.
  let wireGuardTried = false;
  for (const format of formats) {
    let issued: ConfigurationFile | null;
    if (format === 'openvpn') {
      issued = await issueOpenVpn(ctx, issue);
    } else if (wireGuardTried) {
      continue;
    } else {
      wireGuardTried = true;
      issued = await issueWireGuard(ctx, issue, format);
    }
    if (issued !== null)
      return {
        format,
        contentType: MIME_TYPES[format],
        body: issued.body,
        downloadFileName: issued.downloadFileName,
        expiresAt,
      };
  }
  throw new PortalError(
    'addresses-exhausted',
    `no free client address for profile "${profile.profileId}" on any of its nodes`,
  );
}
