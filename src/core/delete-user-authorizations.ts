// POST /delete_user_authorizations: OAuth authorizations only; configurations stay and
// nobody is disconnected (specification §4.11).
import { deleteAuthorizationsOfUser } from '../storage/authorizations.js';
import type { PortalContext } from './context.js';
import { existingUser } from './existing-user.js';
import type { UserId } from '../shared/ids.js';

export async function deleteUserAuthorizations(ctx: PortalContext, userId: UserId): Promise<void> {
  await existingUser(ctx, userId);
  await deleteAuthorizationsOfUser(ctx.db, userId);
}
