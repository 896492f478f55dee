// Which users this instance has lately stored a configuration for: a create in one statement
// (storeInOneStatement) is built for a known user or a new one, and this is its guess. A wrong
// guess costs one statement that gives up; the database, never this memory, decides.
import type { UserId } from '../../shared/ids.js';

/** Users remembered at most: a few megabytes, whatever the number of users. */
const MOST_REMEMBERED = 50_000;

export class RecentUsers {
  readonly #users = new Set<UserId>();

  /** True: the user is likely there (this instance stored a configuration for it lately). */
  has(userId: UserId): boolean {
    return this.#users.has(userId);
  }

  remember(userId: UserId): void {
    if (this.#users.has(userId)) return;
    // The oldest goes first: a Set keeps the order of insertion.
    if (this.#users.size >= MOST_REMEMBERED) {
      const [oldest] = this.#users;
      if (oldest !== undefined) this.#users.delete(oldest);
    }
    this.#users.add(userId);
  }

  forget(userId: UserId): void {
    this.#users.delete(userId);
  }
}
