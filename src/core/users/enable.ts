// POST /enable_user: the user's unexpired WireGuard configurations go back onto their nodes
// (not those of a suspended device); OpenVPN clients may connect again (the node asks the
// portal on every connect).
import { activePeers, stampPeersOfUser } from '../../storage/wg-peers.js';
import type { PortalContext } from '../context.js';
import { enableUserDisabledBy } from '../../storage/users.js';
import { setExistingUserDisabled } from './existing-user.js';
import type { UserId } from '../../shared/ids.js';
import { addPeersToNodes } from '../nodes/index.js';
import { formatAtom } from '../../shared/time.js';

/**
 * Enables the user; with `onlyIfDisabledBy`, only a user that one disabled (checked under the
 * row's lock): false, and nothing changed, otherwise.
 */
export async function enableUser(
  ctx: PortalContext,
  userId: UserId,
  options: { readonly onlyIfDisabledBy?: string } = {},
): Promise<boolean> {
  const now = formatAtom(ctx.clock.now());
  const peers = await ctx.events.change(ctx.db, async (trx, announce) => {
    if (options.onlyIfDisabledBy === undefined) await setExistingUserDisabled(ctx, trx, userId, false);
    else if (!(await enableUserDisabledBy(trx, userId, options.onlyIfDisabledBy))) return null;
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
  if (peers === null) return false;
  ctx.logger.info({ userId, configurations: peers.length }, 'user enabled');
  await addPeersToNodes(ctx, peers, 'enable_user');
  return true;
}
