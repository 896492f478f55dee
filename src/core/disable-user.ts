// POST /disable_user: the user is suspended, not deleted. Its configurations stay in the
// database but leave the nodes at once, so every tunnel stops; enable_user brings them back
// without re-provisioning the devices. OAuth authorizations end too, as in the reference.
import { deleteAuthorizationsOfUser } from '../storage/authorizations.js';
import { setUserDisabled } from '../storage/users.js';
import { peersOfUser } from '../storage/wg-peers.js';
import type { PortalContext } from './context.js';
import { existingUser } from './existing-user.js';
import type { UserId } from './ids.js';
import { removePeersFromNodes } from './node-peers.js';

export async function disableUser(ctx: PortalContext, userId: UserId): Promise<void> {
  await existingUser(ctx, userId);
  const peers = await ctx.db.transaction().execute(async (trx) => {
    await setUserDisabled(trx, userId, true);
    await deleteAuthorizationsOfUser(trx, userId);
    return peersOfUser(trx, userId);
  });
  ctx.logger.info({ userId, configurations: peers.length }, 'user disabled');
  await removePeersFromNodes(ctx, peers);
}
