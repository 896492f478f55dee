// POST /disable_user: the user is suspended, not deleted. Its configurations stay in the
// database but every tunnel stops at once: WireGuard peers leave the nodes, OpenVPN clients
// are disconnected (and their reconnects refused by /connect); enable_user brings them back
// without re-provisioning the devices. OAuth authorizations end too, as in the reference.
import { deleteAuthorizationsOfUser } from '../storage/authorizations.js';
import { certificatesOfUser } from '../storage/certificates.js';
import { setUserDisabled } from '../storage/users.js';
import { peersOfUser } from '../storage/wg-peers.js';
import type { PortalContext } from './context.js';
import { existingUser } from './existing-user.js';
import type { UserId } from './ids.js';
import { removePeersFromNodes } from './node-peers.js';
import { disconnectOpenVpnClients } from './openvpn-clients.js';

export async function disableUser(ctx: PortalContext, userId: UserId): Promise<void> {
  await existingUser(ctx, userId);
  const { peers, certificates } = await ctx.db.transaction().execute(async (trx) => {
    await setUserDisabled(trx, userId, true);
    await deleteAuthorizationsOfUser(trx, userId);
    return { peers: await peersOfUser(trx, userId), certificates: await certificatesOfUser(trx, userId) };
  });
  ctx.logger.info({ userId, configurations: peers.length + certificates.length }, 'user disabled');
  await Promise.all([removePeersFromNodes(ctx, peers), disconnectOpenVpnClients(ctx, certificates)]);
}
