// POST /disable_user: the user is suspended, not deleted. Its configurations stay in the
// database but every tunnel stops at once: WireGuard peers leave the nodes, OpenVPN clients
// are disconnected (and their reconnects refused by /connect); enable_user brings them back
// without re-provisioning the devices. OAuth authorizations end too, as in the reference, and
// so do the user's enrollment tokens (for good: enabling the user does not revive them).
import { deleteAuthorizationsOfUser } from '../storage/authorizations.js';
import { certificatesOfUser } from '../storage/certificates.js';
import { revokeEnrollmentTokensOfUser } from '../storage/enrollment-tokens.js';
import { setUserDisabled } from '../storage/users.js';
import { stampPeersOfUser } from '../storage/wg-peers.js';
import type { PortalContext } from './context.js';
import { existingUser } from './existing-user.js';
import { assertUserWithinReach } from './profile-reach.js';
import type { UserId } from '../shared/ids.js';
import { formatAtom } from '../shared/time.js';
import { removalsOf, removePeersFromNodes } from './node-peers.js';
import { disconnectOpenVpnClients } from './openvpn-clients.js';

export async function disableUser(ctx: PortalContext, userId: UserId): Promise<void> {
  await existingUser(ctx, userId);
  const { peers, certificates } = await ctx.events.change(ctx.db, async (trx, announce) => {
    // The update locks the user's row first: a create for this user waits for it (or this for
    // the create), so the peers read below are all there are, and their new revisions are
    // newer than any instruction sent for them before.
    await setUserDisabled(trx, userId, true);
    await assertUserWithinReach(ctx, trx, userId);
    await deleteAuthorizationsOfUser(trx, userId);
    const at = ctx.clock.now();
    // A revocation is final: enable_user does not bring the user's enrollment tokens back.
    await revokeEnrollmentTokensOfUser(trx, userId, formatAtom(at));
    await announce({ type: 'user.disabled', at, userId });
    return { peers: await stampPeersOfUser(trx, userId), certificates: await certificatesOfUser(trx, userId) };
  });
  ctx.logger.info({ userId, configurations: peers.length + certificates.length }, 'user disabled');
  await Promise.all([removePeersFromNodes(ctx, removalsOf(peers), 'disable_user'), disconnectOpenVpnClients(ctx, certificates, 'disable_user')]);
}
