// GET /users and GET /disabled_users, ordered by user id as the reference.
import { listUserIds } from '../storage/users.js';
import type { PortalContext } from './context.js';

export function listUsers(ctx: PortalContext, filter: { onlyDisabled: boolean }): Promise<string[]> {
  return listUserIds(ctx.db, filter);
}
