// GET /users and GET /disabled_users, ordered by user id as the reference, as JSON text: at
// 100,000 users the database writes it faster than JavaScript would, and an unchanged listing
// comes from the listing cache (src/core/listings/cache.ts). With `prefix`, `limit` or `cursor`
// (an extension, for the console's user search) a page at a time, straight from the index.
import type { UsersPage } from '../../protocol/admin-api.js';
import { directoryInactiveAmong } from '../../storage/scim-users.js';
import { userIdsJson, userIdsPage } from '../../storage/users.js';
import { PortalError } from '../errors.js';
import type { JsonParts } from '../../shared/json-parts.js';
import type { PortalContext } from '../context.js';
import { reachableProfiles } from '../access/index.js';

/** A key limited to some profiles sees only the users with a configuration in them. */
export function listUsers(ctx: PortalContext, filter: { onlyDisabled: boolean }): Promise<JsonParts> {
  const profiles = reachableProfiles(ctx);
  const key = `users:${filter.onlyDisabled ? 'disabled' : 'all'}:${profiles === null ? '*' : JSON.stringify([...profiles].sort())}`;
  return ctx.listings.read(ctx.db, ctx.clock, key, async () => ({
    parts: [Buffer.from(await userIdsJson(ctx.db, { ...filter, profiles }))],
    changesAt: null,
  }));
}

export interface UsersPageQuery {
  readonly onlyDisabled: boolean;
  readonly prefix?: string;
  readonly limit: number;
  /** `next_cursor` of the previous page. */
  readonly cursor?: string;
}

/**
 * One page of the users (or disabled users), sorted; a key limited to profiles sees its users
 * only. With it, which of them the directory (SCIM) calls inactive: enable_user refuses them, so
 * the console does not offer it.
 */
export async function listUsersPage(ctx: PortalContext, query: UsersPageQuery): Promise<UsersPage> {
  const after = query.cursor === undefined ? null : decodeUserCursor(query.cursor);
  const profiles = reachableProfiles(ctx);
  // One more than asked tells whether there is a next page.
  const ids = await userIdsPage(ctx.db, {
    onlyDisabled: query.onlyDisabled,
    profiles,
    prefix: query.prefix ?? null,
    after,
    limit: query.limit + 1,
  });
  const users = ids.slice(0, query.limit);
  const last = users.at(-1);
  return {
    users,
    directory_inactive: await directoryInactiveAmong(ctx.db, users),
    next_cursor:
      ids.length > query.limit && last !== undefined ? Buffer.from(last, 'utf8').toString('base64url') : null,
  };
}

function decodeUserCursor(cursor: string): string {
  const userId = Buffer.from(cursor, 'base64url').toString('utf8');
  // Ours encode a user id exactly; anything else does not survive the round trip, and no user
  // id holds a NUL (which PostgreSQL refuses in text) or more than 255 characters (code points,
  // as user_id counts them: an emoji is one character but two UTF-16 code units).
  if (
    userId === '' ||
    [...userId].length > 255 ||
    userId.includes('\u0000') ||
    Buffer.from(userId, 'utf8').toString('base64url') !== cursor
  )
    throw new PortalError('invalid-parameter', 'invalid value for "cursor"');
  return userId;
}
