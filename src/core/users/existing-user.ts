// The calls on an existing user answer the reference's 400 for an unknown one, and for a user a
// key limited to some profiles may not know of (and its 403 for a user it may not change whole).
import type { Transaction } from 'kysely';
import type { Database } from '../../storage/schema.js';
import { disableEnabledUser, findUser, lockUser, setUserDisabled, type UserState } from '../../storage/users.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import type { UserId } from '../../shared/ids.js';
import { userInSight, userInSightAndWithinReach } from '../access/index.js';
import { callerName } from '../admin-call.js';

/** The user, or the reference's 400 `user does not exist`. */
export async function existingUser(ctx: PortalContext, userId: UserId): Promise<UserState> {
  const user = await findUser(ctx.db, userId);
  if (user === undefined || !(await userInSight(ctx, ctx.db, userId))) throw noSuchUser();
  return user;
}

/**
 * Locks an existing user's row for the transaction (lockUser), or answers the same 400: a
 * request that found the user before its transaction (existingUser) may meet it destroyed by
 * another that ran meanwhile, and must not then announce a second destroy.
 */
export async function lockExistingUser(trx: Transaction<Database>, userId: UserId): Promise<void> {
  if (!(await lockUser(trx, userId))) throw noSuchUser();
}

/**
 * Sets an existing user's `disabled` flag, which locks its row until the transaction ends, or
 * answers the same 400 (and the transaction writes nothing). The update is also the check, so a
 * disable or enable reads no row before its transaction: one round trip fewer. For a key limited
 * to some profiles, a user with anything outside them is refused (403, assertUserWithinReach).
 */
export async function setExistingUserDisabled(
  ctx: PortalContext,
  trx: Transaction<Database>,
  userId: UserId,
  disabled: boolean,
  /** Who disables, when not the call's caller (the directory, whose key is the caller too). */
  by?: string,
): Promise<void> {
  const caller = ctx.call === undefined ? '(portal)' : (callerName(ctx.call.caller) ?? '(unknown)');
  const found = await setUserDisabled(trx, userId, disabled, disabled ? (by ?? caller) : null);
  if (!found || !(await userInSightAndWithinReach(ctx, trx, userId))) throw noSuchUser();
}

/**
 * Disables an existing user only when it is enabled, under its row's lock: false when it is
 * disabled already, by anyone (who disabled it stays recorded, and with it who may enable it
 * again); the same 400 and 403 as setExistingUserDisabled.
 */
export async function disableExistingUserIfEnabled(
  ctx: PortalContext,
  trx: Transaction<Database>,
  userId: UserId,
  by: string,
): Promise<boolean> {
  const disabledNow = await disableEnabledUser(trx, userId, by);
  if (!disabledNow && (await findUser(trx, userId)) === undefined) throw noSuchUser();
  if (!(await userInSightAndWithinReach(ctx, trx, userId))) throw noSuchUser();
  return disabledNow;
}

function noSuchUser(): PortalError {
  return new PortalError('no-such-user', 'user does not exist');
}
