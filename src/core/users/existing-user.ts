// The calls on an existing user answer the reference's 400 for an unknown one.
import { findUser, type UserState } from '../../storage/users.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import type { UserId } from '../../shared/ids.js';

/** The user, or the reference's 400 `user does not exist`. */
export async function existingUser(ctx: PortalContext, userId: UserId): Promise<UserState> {
  const user = await findUser(ctx.db, userId);
  if (user === undefined) throw new PortalError('no-such-user', 'user does not exist');
  return user;
}
