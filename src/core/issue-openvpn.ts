// The OpenVPN path of POST /create (reference §9.2): pick a node, make a new Common Name,
// have the CA issue the client certificate, store it, and write the client file. Nothing is
// pushed to the node: it asks the portal when the client connects (Node API /connect).
import { randomBytes } from 'node:crypto';
import type { Profile } from '../config/portal-config.js';
import { renderOpenVpnClientConfig } from '../openvpn/client-config.js';
import { insertCertificate } from '../storage/certificates.js';
import { isWriteConflict } from '../storage/errors.js';
import { ensureUser } from '../storage/users.js';
import type { ConfigurationFile } from './configuration-file.js';
import type { PortalContext } from './context.js';
import type { CreateConfigurationRequest } from './create-configuration.js';
import { PortalError } from './errors.js';
import { asConnectionId, type ConnectionId } from './ids.js';
import { nodeOrder } from './node-order.js';
import { formatAtom } from './time.js';

/** Attempts at the database write when it loses a race (another portal instance, a busy database). */
const MAX_ATTEMPTS = 5;

export interface OpenVpnIssue {
  readonly request: CreateConfigurationRequest;
  readonly profile: Profile;
  readonly now: Date;
  readonly expiresAt: Date;
}

/** The client file, or null when the profile runs OpenVPN on none of its nodes. */
export async function issueOpenVpn(ctx: PortalContext, issue: OpenVpnIssue): Promise<ConfigurationFile | null> {
  const { request, profile, now, expiresAt } = issue;
  const node = nodeOrder(ctx, profile).find((candidate) => candidate.openVpn !== null);
  if (node === undefined || profile.openVpn === null) return null;
  const ca = await ctx.openVpnKeys.ca();
  if (ca === null) throw new PortalError('unavailable', 'the portal has no OpenVPN CA yet: run "vpn-portal generate-secrets"');

  // The Common Name is the configuration's connection_id: Base64 of 32 random bytes (reference §8.2).
  const commonName: ConnectionId = asConnectionId(randomBytes(32).toString('base64'));
  const credentials = await ca.issueClient({ commonName, profileId: profile.profileId, now, notAfter: expiresAt });
  for (let attempt = 1; ; attempt++) {
    try {
      await ctx.db.transaction().execute(async (trx) => {
        const user = await ensureUser(trx, request.userId, formatAtom(now));
        if (user.isDisabled) throw new PortalError('user-disabled', 'user is disabled');
        await insertCertificate(trx, {
          commonName,
          userId: request.userId,
          profileId: profile.profileId,
          nodeNumber: node.nodeNumber,
          displayName: request.displayName,
          createdAt: formatAtom(now),
          expiresAt: formatAtom(expiresAt),
          authKey: null,
        });
      });
      break;
    } catch (error) {
      if (!isWriteConflict(error) || attempt >= MAX_ATTEMPTS) throw error;
    }
  }
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
  return { body, downloadFileName: null };
}
