// The calls on an existing user answer the reference's 400 for an unknown one, and for a user a
// key limited to some profiles may not know of.
import { findUser, type UserState } from '../../storage/users.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import type { UserId } from '../../shared/ids.js';
import { userInSight } from '../access/index.js';

/** The user, or the reference's 400 `user does not exist`. */
export async function existingUser(ctx: PortalContext, userId: UserId): Promise<UserState> {
  const user = await findUser(ctx.db, userId);
  if (user === undefined || !(await userInSight(ctx, ctx.db, userId)))
    throw new PortalError('no-such-user', 'user does not exist');
  return user;
}
