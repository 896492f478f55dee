// POST /delete_user_authorizations: OAuth authorizations only; configurations stay and
// nobody is disconnected (specification §4.11).
import { deleteAuthorizationsOfUser } from '../../storage/authorizations.js';
import type { PortalContext } from '../context.js';
import { existingUser, lockExistingUser } from './existing-user.js';
import type { UserId } from '../../shared/ids.js';
import { assertUserWithinReach } from '../access/index.js';

export async function deleteUserAuthorizations(ctx: PortalContext, userId: UserId): Promise<void> {
  await existingUser(ctx, userId);
  await ctx.events.change(ctx.db, async (trx, announce) => {
    await lockExistingUser(trx, userId);
    await assertUserWithinReach(ctx, trx, userId);
    const count = await deleteAuthorizationsOfUser(trx, userId);
    await announce({ type: 'authorizations.deleted', at: ctx.clock.now(), userId, count });
  });
}
