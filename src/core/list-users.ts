// GET /users and GET /disabled_users, ordered by user id as the reference.
import { listUserIds } from '../storage/users.js';
import type { PortalContext } from './context.js';

/** A key limited to some profiles sees only the users with a configuration in them. */
export function listUsers(ctx: PortalContext, filter: { onlyDisabled: boolean }): Promise<string[]> {
  return listUserIds(ctx.db, { ...filter, profiles: ctx.call?.caller.profiles ?? null });
}
