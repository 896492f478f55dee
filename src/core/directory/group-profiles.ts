// `scim.groupProfiles`: a directory group grants its members the profiles it names. A user the
// directory provisioned who is in no group granting one of those profiles loses that profile's
// configurations, each as delete_connection deletes it (a revocation receipt each). Profiles no
// group names are the portal's own business and are left alone, and so are users the directory
// did not provision. Run after a group change committed, for the members it touched.
import { asConnectionId, type ProfileId, type RevocationId, type UserId } from '../../shared/ids.js';
import { certificatesOfUser } from '../../storage/certificates.js';
import { groupNamesOfScimUser } from '../../storage/scim-groups.js';
import { findScimUserOfUser } from '../../storage/scim-users.js';
import { peersOfUser } from '../../storage/wg-peers.js';
import type { PortalContext } from '../context.js';
import { deleteConnection } from '../users/index.js';
import { callForUser } from './call-for-user.js';

/** The receipts of the configurations taken from `userIds` because no group of theirs grants their profile. */
export async function applyGroupProfiles(ctx: PortalContext, userIds: Iterable<UserId>): Promise<RevocationId[]> {
  const mapping = ctx.config.scim.groupProfiles;
  if (mapping.size === 0) return [];
  const mapped = new Set([...mapping.values()].flat());
  const receipts: RevocationId[] = [];
  for (const userId of new Set(userIds)) {
    // Destroyed meanwhile (by the directory or an administrator): nothing left to take.
    const scimUser = await findScimUserOfUser(ctx.db, userId);
    if (scimUser === undefined) continue;
    const granted = new Set(
      (await groupNamesOfScimUser(ctx.db, scimUser.scimId)).flatMap((name) => mapping.get(name) ?? []),
    );
    const lost = (profileId: ProfileId): boolean => mapped.has(profileId) && !granted.has(profileId);
    const connectionIds = [
      ...(await peersOfUser(ctx.db, userId)).filter((peer) => lost(peer.profileId)).map((peer) => peer.publicKey),
      ...(await certificatesOfUser(ctx.db, userId))
        .filter((certificate) => lost(certificate.profileId))
        .map((certificate) => certificate.commonName),
    ];
    const userCtx = callForUser(ctx, userId);
    for (const connectionId of connectionIds) {
      const receipt = await deleteConnection(userCtx, userId, asConnectionId(connectionId));
      if (receipt !== null) receipts.push(receipt);
    }
    if (connectionIds.length > 0)
      ctx.logger.info(
        { userId, configurations: connectionIds.length },
        'configurations of profiles no SCIM group of the user grants deleted',
      );
  }
  return receipts;
}
