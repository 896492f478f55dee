// GET /users and GET /disabled_users, ordered by user id as the reference, as JSON text: at
// 100,000 users the database writes it faster than JavaScript would, and an unchanged listing
// comes from the listing cache (src/core/listings/cache.ts).
import { userIdsJson } from '../../storage/users.js';
import type { JsonParts } from '../../shared/json-parts.js';
import type { PortalContext } from '../context.js';

/** A key limited to some profiles sees only the users with a configuration in them. */
export function listUsers(ctx: PortalContext, filter: { onlyDisabled: boolean }): Promise<JsonParts> {
  const profiles = ctx.call?.caller.profiles ?? null;
  const key = `users:${filter.onlyDisabled ? 'disabled' : 'all'}:${profiles === null ? '*' : JSON.stringify([...profiles].sort())}`;
  return ctx.listings.read(ctx.db, ctx.clock, key, async () => ({
    parts: [Buffer.from(await userIdsJson(ctx.db, { ...filter, profiles }))],
    changesAt: null,
  }));
}
