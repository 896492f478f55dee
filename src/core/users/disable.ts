// POST /disable_user: the user is suspended, not deleted. Its configurations stay in the
// database but every tunnel stops at once: WireGuard peers leave the nodes, OpenVPN clients
// are disconnected (and their reconnects refused by /connect); enable_user brings them back
// without re-provisioning the devices. OAuth authorizations end too, as in the reference, and
// so do the user's enrollment tokens (for good: enabling the user does not revive them).
import type { Transaction } from 'kysely';
import type { OpenVpnCertificate } from '../../storage/certificates.js';
import type { Database } from '../../storage/schema.js';
import { endAccessOfUser } from '../../storage/user-access.js';
import type { WireGuardPeer } from '../../storage/wg-peers.js';
import type { PortalContext } from '../context.js';
import { setExistingUserDisabled } from './existing-user.js';
import type { RevocationId, UserId } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import { openVpnConfiguration, wireGuardConfiguration, type Announce } from '../events.js';
import { removalsOf } from '../nodes/index.js';
import { newRevocationId, revokeOnNodes } from '../revocations/index.js';

/** Answers the id of the revocation receipt that follows the configurations leaving their nodes. */
export async function disableUser(
  ctx: PortalContext,
  userId: UserId,
  options: { readonly by?: string } = {},
): Promise<RevocationId> {
  const revocationId = newRevocationId(ctx);
  const ended = await ctx.events.change(ctx.db, async (trx, announce) => {
    // The update locks the user's row first: a create for this user waits for it (or this for
    // the create), so the peers read below are all there are, and their new revisions are
    // newer than any instruction sent for them before.
    await setExistingUserDisabled(ctx, trx, userId, true, options.by);
    return endAccessOfDisabledUser(ctx, trx, announce, userId, revocationId);
  });
  await revokeAccessOfDisabledUser(ctx, userId, revocationId, ended);
  return revocationId;
}

/** What a disable took from a user: its configurations, to leave their nodes after the commit. */
export interface EndedAccess {
  readonly peers: readonly WireGuardPeer[];
  readonly certificates: readonly OpenVpnCertificate[];
}

/**
 * A disable's writes, in a transaction whose caller has just marked the user disabled (its row
 * locked): authorizations end, and enrollment tokens for good (a revocation is final, so
 * enable_user does not bring them back); every configuration is stamped with a new revision.
 */
export async function endAccessOfDisabledUser(
  ctx: PortalContext,
  trx: Transaction<Database>,
  announce: Announce,
  userId: UserId,
  revocationId: RevocationId,
): Promise<EndedAccess> {
  const at = ctx.clock.now();
  const { peers, certificates, enrollmentTokenIds } = await endAccessOfUser(trx, userId, formatAtom(at));
  const configurations = [...peers.map(wireGuardConfiguration), ...certificates.map(openVpnConfiguration)];
  await announce({ type: 'user.disabled', at, userId, revocationId, configurations, enrollmentTokenIds });
  return { peers, certificates };
}

/** After the disable's commit: its configurations leave their nodes, under its receipt. */
export async function revokeAccessOfDisabledUser(
  ctx: PortalContext,
  userId: UserId,
  revocationId: RevocationId,
  { peers, certificates }: EndedAccess,
): Promise<void> {
  ctx.logger.info({ userId, configurations: peers.length + certificates.length, revocationId }, 'user disabled');
  await revokeOnNodes(ctx, [revocationId], removalsOf(peers), certificates, 'disable_user');
}
