// The WireGuard part of `connection_list?show_all=on` and `connected_users?show_all=on`, kept
// in memory in pages that follow changes. A busy portal changes something every second, so a
// listing rebuilt after every change (300 ms at 100,000 configurations) is what a poller sees.
// Instead each profile's listing is held as pages of its order (created_at, public_key); the
// listing journal (migration 0020, written by triggers on every writer, this instance or
// another or a hand edit) names the configurations each committed change touched, and only the
// pages that hold them are built again. A page also stops holding at the first expiry among its
// configurations. Everything is read from the journal before a page is rebuilt, so a change
// committed before a read is always in its answer; one committed meanwhile costs a second
// rebuild, never a stale answer. Reads are one at a time (a rebuild is a few milliseconds).
import {
  LISTING_JOURNAL_SECONDS,
  readListingChanges,
  type JournalCursor,
  type ListingChange,
} from '../../storage/listing-changes.js';
import { activeListingPage, type ListingPosition } from '../../storage/wg-peers.js';
import type { Db } from '../../storage/database.js';
import type { ProfileId } from '../../shared/ids.js';
import { jsonArrayOfPages, type JsonParts } from '../../shared/json-parts.js';

/** Configurations per page: a rebuild of one is some 15 ms on SQLite, 40 ms on PostgreSQL. */
export const LISTING_PAGE_SIZE = 5000;
/**
 * A state not refreshed for this long is dropped and built afresh: the journal keeps twice as
 * long (pruned by the housekeeping of every full pass), so a reader never misses a pruned row.
 */
const LONGEST_UNREAD_MS = (LISTING_JOURNAL_SECONDS * 1000) / 2;

interface Page {
  /** Exclusive lower end; null: the start of the listing. */
  readonly after: ListingPosition | null;
  /** Inclusive upper end; null: the end of the listing. */
  readonly through: ListingPosition | null;
  readonly connections: Buffer;
  readonly userIds: readonly string[];
  readonly count: number;
  readonly builtAt: string;
  readonly changesAt: string | null;
  dirty: boolean;
}

interface ProfileState {
  pages: Page[];
  /** connected_users: the user ids of every page, each once; null until asked after a change. */
  users: Buffer | null;
}

/** The two listings of one profile's active WireGuard configurations, as JSON arrays. */
export interface ActiveListing {
  readonly connections: JsonParts;
  readonly userIds: () => JsonParts;
}

export class ListingPages {
  readonly #profiles = new Map<ProfileId, ProfileState>();
  #cursor: JournalCursor | null = null;
  #readAt = 0;
  #queue: Promise<unknown> = Promise.resolve();
  /** Pages built (for tests and the bench: how much a read had to do). */
  pagesBuilt = 0;

  readonly #pageSize: number;

  /** `pageSize`: configurations per page (a test makes them small to have many). */
  constructor(pageSize: number = LISTING_PAGE_SIZE) {
    this.#pageSize = pageSize;
  }

  /** One profile's listing for `now` (ATOM), from memory for every page no change touched. */
  read(db: Db, profileId: ProfileId, now: string): Promise<ActiveListing> {
    const next = this.#queue.then(() => this.#read(db, profileId, now));
    this.#queue = next.catch(() => {});
    return next;
  }

  async #read(db: Db, profileId: ProfileId, now: string): Promise<ActiveListing> {
    if (performance.now() - this.#readAt > LONGEST_UNREAD_MS) {
      this.#profiles.clear();
      this.#cursor = null;
    }
    try {
      const { changes, cursor } = await readListingChanges(db, this.#cursor);
      this.#cursor = cursor;
      this.#readAt = performance.now();
      for (const change of changes) this.#touch(change);
      let state = this.#profiles.get(profileId);
      if (state === undefined) {
        state = { pages: await this.#build(db, profileId, now, null, null), users: null };
        this.#profiles.set(profileId, state);
      } else {
        await this.#refresh(db, profileId, now, state);
      }
      return answer(state);
    } catch (error) {
      // Whatever was half done is forgotten: the next read starts afresh.
      this.#profiles.clear();
      this.#cursor = null;
      throw error;
    }
  }

  #touch(change: ListingChange): void {
    const state = this.#profiles.get(change.profileId);
    if (state === undefined) return;
    const page = state.pages[pageOf(state.pages, change)];
    if (page !== undefined) page.dirty = true;
  }

  /** Rebuilds every run of neighbouring pages that a change touched or an expiry passed. */
  async #refresh(db: Db, profileId: ProfileId, now: string, state: ProfileState): Promise<void> {
    const pages: Page[] = [];
    let changed = false;
    for (let index = 0; index < state.pages.length; ) {
      const page = state.pages[index] as Page;
      if (!stale(page, now)) {
        pages.push(page);
        index++;
        continue;
      }
      let end = index;
      while (end + 1 < state.pages.length && stale(state.pages[end + 1] as Page, now)) end++;
      pages.push(...(await this.#build(db, profileId, now, page.after, (state.pages[end] as Page).through)));
      changed = true;
      index = end + 1;
    }
    if (!changed) return;
    state.pages = pages;
    state.users = null;
  }

  /**
   * The pages of the range (after, through], at most `pageSize` each, covering it whole
   * (so the last page, where new configurations land, is split when it is rebuilt).
   */
  async #build(
    db: Db,
    profileId: ProfileId,
    now: string,
    after: ListingPosition | null,
    through: ListingPosition | null,
  ): Promise<Page[]> {
    const pages: Page[] = [];
    let from = after;
    for (;;) {
      const page = await activeListingPage(db, { profileId, now, after: from, through, pageSize: this.#pageSize });
      this.pagesBuilt++;
      const full = page.count === this.#pageSize && page.last !== null;
      // The last page of the range ends where the range ends, so the pages keep covering it all.
      const end = full ? page.last : through;
      pages.push({
        after: from,
        through: end,
        connections: Buffer.from(page.connections),
        userIds: JSON.parse(page.userIds) as string[],
        count: page.count,
        builtAt: now,
        changesAt: page.changesAt,
        dirty: false,
      });
      if (!full || (through !== null && page.last !== null && samePosition(page.last, through))) return pages;
      from = page.last;
    }
  }
}

function stale(page: Page, now: string): boolean {
  return page.dirty || now < page.builtAt || (page.changesAt !== null && now >= page.changesAt);
}

function answer(state: ProfileState): ActiveListing {
  return {
    connections: jsonArrayOfPages(state.pages.map((page) => page.connections)),
    userIds: () => {
      // A user with several configurations is listed once, where the first of them is.
      if (state.users === null) {
        const users = new Set<string>();
        for (const page of state.pages) for (const userId of page.userIds) users.add(userId);
        state.users = Buffer.from(JSON.stringify([...users]));
      }
      return [state.users];
    },
  };
}

/** The page whose range holds `position` (pages are in order and cover the listing whole). */
function pageOf(pages: readonly Page[], position: ListingPosition): number {
  let low = 0;
  let high = pages.length - 1;
  while (low < high) {
    const middle = (low + high) >> 1;
    const through = (pages[middle] as Page).through;
    if (through === null || compare(position, through) <= 0) high = middle;
    else low = middle + 1;
  }
  return low;
}

function compare(a: ListingPosition, b: ListingPosition): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  if (a.publicKey === b.publicKey) return 0;
  return a.publicKey < b.publicKey ? -1 : 1;
}

function samePosition(a: ListingPosition, b: ListingPosition): boolean {
  return compare(a, b) === 0;
}
