// Queries on `destroyed_users` (migration 0043): each user id destroyed here, kept for good, so
// that the eduVPN import never brings a destroyed user back, nor anything eduVPN holds of it (a
// destroy is final, also a year on, when its receipt and audit row are gone). A row holds a
// digest of the id, not the id: it names nobody and lists nobody, and answers only whether an id
// one already has was destroyed here, and when last.
import type { UserId } from '../shared/ids.js';
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import type { Db } from './database.js';
import { destroyedUserDigest, destroyedUserNameKeyDigest } from './destroyed-user-digest.js';

/** Notes `userId` destroyed at `destroyedAt` (ATOM); a user destroyed before keeps one row, with the latest time. */
export async function noteDestroyedUser(db: Db, userId: UserId, destroyedAt: string): Promise<void> {
  const nameKeyDigest = destroyedUserNameKeyDigest(userId);
  await db
    .insertInto('destroyed_users')
    .values({ user_digest: destroyedUserDigest(userId), destroyed_at: destroyedAt, name_key_digest: nameKeyDigest })
    .onConflict((conflict) =>
      conflict.column('user_digest').doUpdateSet({ destroyed_at: destroyedAt, name_key_digest: nameKeyDigest }),
    )
    .execute();
}

/**
 * Whether a user of this id was destroyed here, letter case aside (`alice@example.org` for a
 * destroyed `Alice@Example.org`); of those destroyed before migration 0066 whose destroy receipt
 * was gone by then, only the exact id.
 */
export async function destroyedAnyCase(db: Db, userId: UserId): Promise<boolean> {
  const row = await db
    .selectFrom('destroyed_users')
    .select('user_digest')
    .where((where) =>
      where.or([
        where('user_digest', '=', destroyedUserDigest(userId)),
        where('name_key_digest', '=', destroyedUserNameKeyDigest(userId)),
      ]),
    )
    .executeTakeFirst();
  return row !== undefined;
}

/** Ids per statement: far below both dialects' parameter limits. */
const LOOKUP_IDS = 500;

/** Of `userIds`, those destroyed here (whether made again since or not), each with when it was last. */
export async function destroyedUsersAmong(db: Db, userIds: readonly UserId[]): Promise<Map<UserId, string>> {
  const found = new Map<UserId, string>();
  for (const ids of sizeLimitedGroups([...new Set(userIds)], () => 1, LOOKUP_IDS)) {
    const byDigest = new Map(ids.map((userId) => [destroyedUserDigest(userId), userId]));
    const rows = await db
      .selectFrom('destroyed_users')
      .select(['user_digest', 'destroyed_at'])
      .where('user_digest', 'in', [...byDigest.keys()])
      .execute();
    for (const row of rows) {
      const userId = byDigest.get(row.user_digest);
      if (userId !== undefined) found.set(userId, row.destroyed_at);
    }
  }
  return found;
}
