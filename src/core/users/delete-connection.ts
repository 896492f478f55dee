// POST /delete_connection: deletes one configuration of the user (a WireGuard public key or an
// OpenVPN Common Name) and ends its tunnel. Like the reference, an
// unknown id or one owned by another user changes nothing and is not an error.
import { deleteCertificate, findCertificateOfUser } from '../../storage/certificates.js';
import { nextRevision } from '../../storage/revisions.js';
import { deletePeer, findPeerOfUser } from '../../storage/wg-peers.js';
import type { PortalContext } from '../context.js';
import { openVpnConfiguration, wireGuardConfiguration } from '../events.js';
import { existingUser } from './existing-user.js';
import { assertProfileAllowed } from '../access/index.js';
import type { ConnectionId, RevocationId, UserId } from '../../shared/ids.js';
import { removalsOf, releaseAddresses } from '../nodes/index.js';
import { newRevocationId, revokeOnNodes } from '../revocations/index.js';

/** Answers the id of the revocation receipt, or null when nothing was deleted (then there is none). */
export async function deleteConnection(
  ctx: PortalContext,
  userId: UserId,
  connectionId: ConnectionId,
): Promise<RevocationId | null> {
  await existingUser(ctx, userId);
  const revocationId = newRevocationId(ctx);
  const deleted = await ctx.events.change(ctx.db, async (trx, announce) => {
    const peer = await findPeerOfUser(trx, userId, connectionId);
    if (peer === undefined) return undefined;
    assertProfileAllowed(ctx, peer.profileId);
    // Another portal instance may have deleted it since: then the address is not ours to give
    // back, but the peer must still leave the node.
    const ours = await deletePeer(trx, peer.publicKey);
    if (ours) {
      await releaseAddresses(trx, ctx.config, [peer]);
      await announce({
        type: 'configuration.deleted',
        at: ctx.clock.now(),
        configuration: wireGuardConfiguration(peer),
        revocationId,
      });
    }
    return { peer, revision: await nextRevision(trx), ours };
  });
  if (deleted !== undefined) {
    ctx.logger.info({ userId, connectionId, revocationId }, 'WireGuard configuration deleted');
    // Deleted by another instance a moment before: its receipt is that instance's; the removal is sent anyway.
    await revokeOnNodes(
      ctx,
      deleted.ours ? [revocationId] : [],
      removalsOf([deleted.peer], deleted.revision),
      [],
      'delete_connection',
    );
    return deleted.ours ? revocationId : null;
  }
  const certificate = await findCertificateOfUser(ctx.db, userId, connectionId);
  if (certificate !== undefined) assertProfileAllowed(ctx, certificate.profileId);
  const certificateDeleted =
    certificate !== undefined &&
    (await ctx.events.change(ctx.db, async (trx, announce) => {
      if (!(await deleteCertificate(trx, certificate.commonName))) return false;
      await announce({
        type: 'configuration.deleted',
        at: ctx.clock.now(),
        configuration: openVpnConfiguration(certificate),
        revocationId,
      });
      return true;
    }));
  if (certificate !== undefined && certificateDeleted) {
    ctx.logger.info({ userId, connectionId, revocationId }, 'OpenVPN configuration deleted');
    await revokeOnNodes(ctx, [revocationId], [], [certificate], 'delete_connection');
    return revocationId;
  }
  ctx.logger.info({ userId }, 'delete_connection: no such configuration of this user; nothing changed');
  return null;
}
