// Whether a user is disabled, and whether the directory (SCIM) holds them so: the user page and
// the Enable confirmation both ask, through the Admin API as the console reads everything.
import type { FastifyRequest } from 'fastify';
import type { AdminCaller } from '../../core/admin-call.js';
import type { PortalContext } from '../../core/context.js';
import { disabledUsersRoute } from '../admin-api/routes/listings/disabled-users.js';
import { readAnswer } from './calls.js';

/** A user's state as the console shows it: `directoryInactive` only of a disabled user. */
export interface UserState {
  readonly disabled: boolean;
  /** The directory last called the user inactive: `enable_user` would answer 409. */
  readonly directoryInactive: boolean;
}

export async function userStateOf(
  ctx: PortalContext,
  caller: AdminCaller,
  request: FastifyRequest,
  userId: string,
): Promise<UserState> {
  // The ids are sorted, so the user, when disabled, is the first that starts with its own id.
  const page = await readAnswer(ctx, caller, request, disabledUsersRoute, { prefix: userId, limit: '1' });
  const disabled = page.disabled_users[0] === userId;
  return { disabled, directoryInactive: disabled && (page.directory_inactive ?? []).includes(userId) };
}
