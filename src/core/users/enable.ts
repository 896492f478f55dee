// POST /enable_user: the user's unexpired WireGuard configurations go back onto their nodes
// (not those of a suspended device); OpenVPN clients may connect again (the node asks the
// portal on every connect). A user the directory (SCIM) calls inactive stays disabled (409).
import type { Transaction } from 'kysely';
import { activePeers, stampPeersOfUser, type WireGuardPeer } from '../../storage/wg-peers.js';
import type { Database } from '../../storage/schema.js';
import type { PortalContext } from '../context.js';
import type { Announce } from '../events.js';
import { enableUserDisabledBy } from '../../storage/users.js';
import { directoryCallsInactive } from '../../storage/scim-users.js';
import { PortalError } from '../errors.js';
import { setExistingUserDisabled } from './existing-user.js';
import type { UserId } from '../../shared/ids.js';
import { addPeersToNodes, readTimeNow, type ReadTime } from '../nodes/index.js';
import { formatAtom } from '../../shared/time.js';

export interface EnableOptions {
  /** Only a user that this one disabled (checked under the row's lock). */
  readonly onlyIfDisabledBy?: string;
}

/**
 * Enables the user; with `onlyIfDisabledBy`, only a user that one disabled: false, and nothing
 * changed, otherwise.
 */
export async function enableUser(ctx: PortalContext, userId: UserId, options: EnableOptions = {}): Promise<boolean> {
  const readAt = readTimeNow(ctx);
  const peers = await ctx.events.change(ctx.db, (trx, announce) =>
    enableUserInTransaction(ctx, trx, announce, userId, options),
  );
  if (peers === null) return false;
  await pushPeersOfEnabledUser(ctx, userId, peers, readAt);
  return true;
}

/**
 * The enable's database part, in the caller's transaction (which may hold other rows the enable
 * must not race, as SCIM's user row): the peers to push once it commits, or null when
 * `onlyIfDisabledBy` left the user as it was.
 */
export async function enableUserInTransaction(
  ctx: PortalContext,
  trx: Transaction<Database>,
  announce: Announce,
  userId: UserId,
  options: EnableOptions = {},
): Promise<WireGuardPeer[] | null> {
  const now = formatAtom(ctx.clock.now());
  if (options.onlyIfDisabledBy === undefined) {
    // The update locks the user's row first: a directory's `active: false` noted under that lock
    // committed before this read, or waits for this enable and disables the user again.
    await setExistingUserDisabled(ctx, trx, userId, false);
    if (await directoryCallsInactive(trx, userId)) throw directorySaysInactive();
  } else if (!(await enableUserDisabledBy(trx, userId, options.onlyIfDisabledBy))) return null;
  await announce({ type: 'user.enabled', at: ctx.clock.now(), userId });
  const stamped = await stampPeersOfUser(trx, userId);
  // Those the nodes should have now, by the rule every reconcile pass follows (unexpired, device not suspended).
  const wanted = new Set(
    (await activePeers(trx, { now, publicKeys: stamped.map((peer) => peer.publicKey) })).map((peer) => peer.publicKey),
  );
  return stamped.filter((peer) => wanted.has(peer.publicKey));
}

/** After the enable committed: its peers go back onto their nodes (`readAt`: taken before its transaction). */
export async function pushPeersOfEnabledUser(
  ctx: PortalContext,
  userId: UserId,
  peers: readonly WireGuardPeer[],
  readAt: ReadTime,
): Promise<void> {
  ctx.logger.info({ userId, configurations: peers.length }, 'user enabled');
  await addPeersToNodes(ctx, peers, 'enable_user', readAt);
}

/**
 * The directory (SCIM) calls the person inactive: they left, whoever disabled the user first. The
 * directory's `active: true` lets them back in; an administrator's enable alone would not last.
 */
function directorySaysInactive(): PortalError {
  return new PortalError(
    'conflict',
    'the directory (SCIM) calls this user inactive: it can be enabled once the directory calls the person active again',
  );
}
