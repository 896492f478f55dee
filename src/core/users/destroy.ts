// POST /destroy: the user, all of its configurations, authorizations and devices are deleted
// (database first, in one transaction; each live device announced as retired, so a webhook
// receiver following devices learns it; the user's id kept as a digest, so that the eduVPN import
// never brings it back), then the peers leave the nodes and OpenVPN clients are disconnected.
import { deleteCertificatesOfUser } from '../../storage/certificates.js';
import { noteDestroyedUser } from '../../storage/destroyed-users.js';
import { liveDevicesOfUser } from '../../storage/devices.js';
import { enrollmentTokenIdsOfUser } from '../../storage/enrollment-tokens.js';
import { deleteUser } from '../../storage/users.js';
import { nextRevision } from '../../storage/revisions.js';
import { deletePeersOfUser } from '../../storage/wg-peers.js';
import { formatAtom } from '../../shared/time.js';
import type { PortalContext } from '../context.js';
import { configurationsDeleted, type PortalEvent } from '../events.js';
import { existingUser, lockExistingUser } from './existing-user.js';
import { assertUserWithinReach } from '../access/index.js';
import type { RevocationId, UserId } from '../../shared/ids.js';
import { removalsOf, releaseAddresses } from '../nodes/index.js';
import { newRevocationId, revokeOnNodes } from '../revocations/index.js';

/** Answers the id of the revocation receipt that follows the configurations leaving their nodes. */
export async function destroyUser(ctx: PortalContext, userId: UserId): Promise<RevocationId> {
  await existingUser(ctx, userId);
  const revocationId = newRevocationId(ctx);
  const { peers, certificates, revision } = await ctx.events.change(ctx.db, async (trx, announce) => {
    // With several portal instances on one database: the lock keeps a concurrent create from
    // adding a configuration now, and the addresses given back are exactly those of the
    // configurations this transaction deleted (not those another instance deleted first).
    await lockExistingUser(trx, userId);
    await assertUserWithinReach(ctx, trx, userId);
    const peers = await deletePeersOfUser(trx, userId);
    await releaseAddresses(trx, ctx.config, peers);
    const certificates = await deleteCertificatesOfUser(trx, userId);
    const devices = await liveDevicesOfUser(trx, userId);
    const enrollmentTokenIds = await enrollmentTokenIdsOfUser(trx, userId);
    await deleteUser(trx, userId); // cascades to oauth_authorizations, devices and their enrollment tokens
    const at = ctx.clock.now();
    await noteDestroyedUser(trx, userId, formatAtom(at));
    await announce(
      configurationsDeleted(peers, certificates, at, revocationId),
      devices.map(
        ({ deviceId, profileId, platform, serial, mdmId }): PortalEvent => ({
          type: 'device.retired',
          at,
          device: { deviceId, userId, profileId, platform, serial, mdmId },
        }),
      ),
      { type: 'user.destroyed', at, userId, revocationId, enrollmentTokenIds },
    );
    return { peers, certificates, revision: await nextRevision(trx) };
  });
  ctx.logger.info({ userId, configurations: peers.length + certificates.length, revocationId }, 'user destroyed');
  await revokeOnNodes(ctx, [revocationId], removalsOf(peers, revision), certificates, 'destroy');
  return revocationId;
}
