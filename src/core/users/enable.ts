// POST /enable_user: the user's unexpired WireGuard configurations go back onto their nodes
// (not those of a suspended device); OpenVPN clients may connect again (the node asks the
// portal on every connect).
import { activePeers, stampPeersOfUser } from '../../storage/wg-peers.js';
import type { PortalContext } from '../context.js';
import { setExistingUserDisabled } from './existing-user.js';
import type { UserId } from '../../shared/ids.js';
import { addPeersToNodes } from '../nodes/index.js';
import { formatAtom } from '../../shared/time.js';

export async function enableUser(ctx: PortalContext, userId: UserId): Promise<void> {
  const now = formatAtom(ctx.clock.now());
  const peers = await ctx.events.change(ctx.db, async (trx, announce) => {
    await setExistingUserDisabled(ctx, trx, userId, false);
    await announce({ type: 'user.enabled', at: ctx.clock.now(), userId });
    const stamped = await stampPeersOfUser(trx, userId);
    // Those the nodes should have now, by the rule every reconcile pass follows (unexpired, device not suspended).
    const wanted = new Set(
      (await activePeers(trx, { now, publicKeys: stamped.map((peer) => peer.publicKey) })).map(
        (peer) => peer.publicKey,
      ),
    );
    return stamped.filter((peer) => wanted.has(peer.publicKey));
  });
  ctx.logger.info({ userId, configurations: peers.length }, 'user enabled');
  await addPeersToNodes(ctx, peers, 'enable_user');
}
