// Queries on `destroyed_users` (migration 0043): each user id destroyed here, kept for good, so
// that the eduVPN import never brings a destroyed user back, nor anything eduVPN holds of it (a
// destroy is final, also a year on, when its receipt and audit row are gone). A row holds a
// digest of the id, not the id: it names nobody and lists nobody, and answers only whether an id
// one already has was destroyed here, and when last.
import type { UserId } from '../shared/ids.js';
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import type { Db } from './database.js';
import { destroyedUserDigest } from './destroyed-user-digest.js';

/** Notes `userId` destroyed at `destroyedAt` (ATOM); a user destroyed before keeps one row, with the latest time. */
export async function noteDestroyedUser(db: Db, userId: UserId, destroyedAt: string): Promise<void> {
  await db
    .insertInto('destroyed_users')
    .values({ user_digest: destroyedUserDigest(userId), destroyed_at: destroyedAt })
    .onConflict((conflict) => conflict.column('user_digest').doUpdateSet({ destroyed_at: destroyedAt }))
    .execute();
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
