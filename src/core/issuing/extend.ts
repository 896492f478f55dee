// POST /extend (ours): renews a configuration without a new key, so the device keeps working
// with what it has. The new expiry is `now + expires_in` by create's rules (sessionExpiry or a
// supportedSessionExpiry entry, capped by the OpenVPN CA's end and by the end of the certificate
// a device enrolled with). It never moves an expiry
// earlier (delete_connection ends a configuration) and never brings back an expired one
// (revocations are final). An OpenVPN configuration's expiry is also its certificate's, so
// its certificate is re-issued for the same key, which the portal knows only when the device
// brought it as a CSR; one whose key the portal made (and did not keep) cannot be extended.
// Nothing is pushed to the nodes: what is on them stays right, only later.
import type { IssuedCertificate } from '../../openvpn/certificate-authority.js';
import type { ConnectionId, UserId, VpnProto } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import { findCertificateOfUser, type OpenVpnCertificate } from '../../storage/certificates.js';
import { deviceCertificateEndOf } from '../../storage/devices.js';
import { extendConfigurationRow } from '../../storage/expiry-change.js';
import { findUser } from '../../storage/users.js';
import { findPeerOfUser } from '../../storage/wg-peers.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import { openVpnConfiguration, wireGuardConfiguration } from '../events.js';
import { existingUser } from '../users/index.js';
import { cappedExpiry, configurationExpiry, warningAlreadyPast } from '../expiry/index.js';
import { assertProfileAllowed } from '../access/index.js';

export interface ExtendedConfiguration {
  readonly connectionId: ConnectionId;
  readonly vpnProto: VpnProto;
  readonly expiresAt: Date;
  /** OpenVPN: the new certificate (PEM) for the device's key, to replace the file's `<cert>`; WireGuard: null. */
  readonly certificatePem: string | null;
}

export async function extendConfiguration(
  ctx: PortalContext,
  userId: UserId,
  connectionId: ConnectionId,
  expiresIn: string | undefined,
): Promise<ExtendedConfiguration> {
  const user = await existingUser(ctx, userId);
  const now = ctx.clock.now();
  const ca = await ctx.openVpnKeys.ca();
  const peer = await findPeerOfUser(ctx.db, userId, connectionId);
  const certificate = peer === undefined ? await findCertificateOfUser(ctx.db, userId, connectionId) : undefined;
  const table = peer === undefined ? 'certificates' : 'wg_peers';
  // As create: the CA's end caps it, and so does the end of the certificate its device enrolled
  // with, which the configuration never outlives (enrolling with the renewed one replaces it).
  const deviceCertificateEnd = await deviceCertificateEndOf(ctx.db, table, connectionId);
  const expiresAt = cappedExpiry(
    cappedExpiry(configurationExpiry(ctx.config, now, expiresIn), ca?.notAfter ?? null),
    deviceCertificateEnd === null ? null : new Date(deviceCertificateEnd),
  );
  const found = peer ?? certificate;
  const configuration =
    peer !== undefined
      ? wireGuardConfiguration(peer)
      : certificate !== undefined
        ? openVpnConfiguration(certificate)
        : undefined;
  if (found === undefined || configuration === undefined)
    throw new PortalError('no-such-configuration', 'the user has no configuration with this "connection_id"');
  assertProfileAllowed(ctx, found.profileId);
  // As create: a disabled user gets nothing new until enabled again.
  if (user.isDisabled) throw new PortalError('user-disabled', 'user is disabled');
  const previousExpiresAt = new Date(found.expiresAt);
  if (previousExpiresAt.getTime() <= now.getTime()) throw expired();
  if (expiresAt.getTime() < previousExpiresAt.getTime()) {
    throw new PortalError(
      'conflict',
      `the configuration expires at ${found.expiresAt}, later than ${deviceCertificateEnd === formatAtom(expiresAt) ? 'the end of the certificate its device enrolled with' : '"expires_in" would make it'} (${formatAtom(expiresAt)}); extend never shortens, delete_connection ends a configuration`,
    );
  }

  const issued = certificate === undefined ? null : await reissueCertificate(ctx, certificate, now, expiresAt);
  const change = {
    now: formatAtom(now),
    expiresAt: formatAtom(expiresAt),
    expiryWarned: warningAlreadyPast(ctx.config, now, expiresAt),
  };
  await ctx.events.change(ctx.db, async (trx, announce) => {
    // Destroyed, disabled, expired or deleted since it was read: nothing changes.
    const current = await findUser(trx, userId);
    if (current === undefined) throw new PortalError('no-such-user', 'user does not exist');
    if (current.isDisabled) throw new PortalError('user-disabled', 'user is disabled');
    // Expired by the clock as it is now, not as it was when the call began: one that expired in
    // between may be off its nodes already, and must stay off.
    const extended = await extendConfigurationRow(trx, table, connectionId, {
      ...change,
      now: formatAtom(ctx.clock.now()),
    });
    if (!extended) throw expired();
    await announce({ type: 'configuration.extended', at: now, configuration, expiresAt, previousExpiresAt });
  });
  ctx.logger.info(
    { userId, connectionId, expiresAt: change.expiresAt },
    `${configuration.vpnProto === 'wireguard' ? 'WireGuard' : 'OpenVPN'} configuration extended`,
  );
  return { connectionId, vpnProto: configuration.vpnProto, expiresAt, certificatePem: issued?.certificatePem ?? null };
}

function expired(): PortalError {
  return new PortalError(
    'conflict',
    'the configuration has expired; an expired configuration is never brought back, create a new one',
  );
}

/** A new certificate for the key of the device's CSR, same Common Name and profile. */
async function reissueCertificate(
  ctx: PortalContext,
  certificate: OpenVpnCertificate,
  now: Date,
  notAfter: Date,
): Promise<IssuedCertificate> {
  if (certificate.publicKey === null) {
    throw new PortalError(
      'conflict',
      'this OpenVPN configuration cannot be extended: its key was made by the portal and not kept, so no certificate can be issued for it again; ' +
        'create a new configuration (with "csr", the device keeps its key and the configuration can be extended)',
    );
  }
  const ca = await ctx.openVpnKeys.ca();
  if (ca === null)
    throw new PortalError('unavailable', 'the portal has no OpenVPN CA yet: run "vpn-portal generate-secrets"');
  return ca.certifyClientKey({
    commonName: certificate.commonName,
    profileId: certificate.profileId,
    now,
    notAfter,
    subjectPublicKeyInfo: Buffer.from(certificate.publicKey, 'base64'),
  });
}
