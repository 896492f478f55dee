// The OpenVPN path of POST /create (reference §9.2): pick a node, make a new Common Name,
// have the CA issue the client certificate (for a new key, or for the key of the device's
// CSR), store it, and write the client file. Nothing is pushed to the node: it asks the
// portal when the client connects (Node API /connect).
import { randomBytes } from 'node:crypto';
import { renderOpenVpnClientConfig } from '../../openvpn/client-config.js';
import { insertCertificate, type OpenVpnCertificate } from '../../storage/certificates.js';
import type { ConfigurationFile } from './configuration-file.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import { openVpnConfiguration } from '../events.js';
import { runClosingWrites } from '../../storage/closing-writes.js';
import { keepAnswer, storeConfiguration, type Issue } from './issue.js';
import { asConnectionId, type ConnectionId } from '../../shared/ids.js';
import { nodeOrder } from '../nodes/index.js';
import { formatAtom } from '../../shared/time.js';

/** The client file, or null when the profile runs OpenVPN on none of its nodes. */
export async function issueOpenVpn(ctx: PortalContext, issue: Issue): Promise<ConfigurationFile | null> {
  const { request, profile, now, expiresAt } = issue;
  const node = nodeOrder(ctx, profile).find((candidate) => candidate.openVpn !== null);
  if (node === undefined || profile.openVpn === null) return null;
  const ca = await ctx.openVpnKeys.ca();
  if (ca === null)
    throw new PortalError('unavailable', 'the portal has no OpenVPN CA yet: run "vpn-portal generate-secrets"');

  // The Common Name is the configuration's connection_id: Base64 of 32 random bytes (reference §8.2).
  const commonName: ConnectionId = asConnectionId(randomBytes(32).toString('base64'));
  const deviceKey = issue.deviceKeys?.openVpn ?? null;
  const credentials =
    deviceKey === null
      ? await ca.issueClient({ commonName, profileId: profile.profileId, now, notAfter: expiresAt })
      : {
          ...(await ca.certifyClientKey({
            commonName,
            profileId: profile.profileId,
            now,
            notAfter: expiresAt,
            subjectPublicKeyInfo: deviceKey.subjectPublicKeyInfo,
          })),
          privateKeyPem: null,
        };
  const body = renderOpenVpnClientConfig(
    { hostName: node.hostName, ...profile.openVpn },
    {
      caCertificatePem: ca.certificatePem,
      certificatePem: credentials.certificatePem,
      privateKeyPem: credentials.privateKeyPem,
      tlsCryptKey: ctx.openVpnKeys.tlsCryptKey(profile.profileId),
    },
    { preferTcp: request.preferTcp, random: ctx.random },
  );
  const file: ConfigurationFile = { body, downloadFileName: null };
  await storeConfiguration(ctx, issue, async (trx) => {
    const certificate: OpenVpnCertificate = {
      commonName,
      userId: request.userId,
      profileId: profile.profileId,
      nodeNumber: node.nodeNumber,
      displayName: request.displayName,
      createdAt: formatAtom(now),
      expiresAt: formatAtom(expiresAt),
      authKey: null,
      publicKey: deviceKey === null ? null : deviceKey.subjectPublicKeyInfo.toString('base64'),
      expiryWarned: issue.expiryWarned,
    };
    await insertCertificate(trx, certificate);
    await keepAnswer(trx, issue, 'openvpn', file, commonName);
    return {
      configuration: openVpnConfiguration(certificate),
      finish: (last, writes) => runClosingWrites(last, writes),
    };
  });
  return file;
}
