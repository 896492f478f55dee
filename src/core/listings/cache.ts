// Large listings served from memory while nothing they show has changed. At 100,000
// configurations `connection_list?show_all=on` is some 20 MB of JSON that takes the database
// a tenth of a second or more to build; most calls (a dashboard polling it) would get the
// same text again. An entry is used only while
//  - the listing generation (moved by every change to users or configurations, in the
//    change's own transaction, see src/listeners/listing-generation.ts) is the one read
//    before the entry was built: the counter is shared through the database, so a change
//    made by another portal instance is seen as well, and
//  - the clock is before the first expiry the entry did not yet account for.
// The generation is read before the listing: a change that commits in between makes the
// entry newer than its generation, which costs one needless rebuild, never a stale answer.
// Builds of one key that overlap share one database query.
import { readListingGeneration, type ListingGeneration } from '../../storage/listing-generation.js';
import type { Db } from '../../storage/database.js';
import type { JsonParts } from '../../shared/json-parts.js';
import { formatAtom, type Clock } from '../../shared/time.js';
import { ListingPages } from './pages.js';

/**
 * What a build returns: the listing and the first expiry (ATOM) that would change it; null:
 * none. Its large parts are Buffers, converted from the database's text as each arrives: every
 * answer sends these same bytes, and no 20 MB text is held next to its bytes.
 */
export interface BuiltListing {
  readonly parts: JsonParts;
  readonly changesAt: string | null;
}

interface Entry {
  readonly generation: ListingGeneration;
  /** The time (ATOM) the listing was built for: it holds from then… */
  readonly builtAt: string;
  /** …until this time (exclusive); null: until the generation moves; undefined: still being built. */
  readonly changesAt: string | null | undefined;
  readonly body: Promise<JsonParts>;
}

export class ListingCache {
  readonly #entries = new Map<string, Entry>();
  /** The active WireGuard configurations of each profile, in pages that follow changes (./pages.ts). */
  readonly pages = new ListingPages();

  /**
   * The listing `key` as `build` makes it for `now` (ATOM), from memory when nothing changed
   * since it was last built. A failed build is forgotten, so the next call tries again.
   */
  async read(db: Db, clock: Clock, key: string, build: (now: string) => Promise<BuiltListing>): Promise<JsonParts> {
    const generation = await readListingGeneration(db);
    const now = formatAtom(clock.now());
    const entry = this.#entries.get(key);
    if (entry !== undefined && holds(entry, generation, now)) return entry.body;
    const built = build(now);
    const body = built.then((listing) => listing.parts);
    // The failure reaches this caller through `built`; calls sharing `body` see it too.
    body.catch(() => {});
    const fresh: Entry = { generation, builtAt: now, changesAt: undefined, body };
    this.#entries.set(key, fresh);
    try {
      const listing = await built;
      // Only the entry this call made is completed; a newer one may have replaced it meanwhile.
      if (this.#entries.get(key) === fresh) this.#entries.set(key, { ...fresh, changesAt: listing.changesAt });
      return listing.parts;
    } catch (error) {
      if (this.#entries.get(key) === fresh) this.#entries.delete(key);
      throw error;
    }
  }
}

function holds(entry: Entry, generation: ListingGeneration, now: string): boolean {
  if (entry.generation !== generation || now < entry.builtAt) return false;
  // A build still running is shared only within its own second: its first expiry is not known yet.
  if (entry.changesAt === undefined) return now === entry.builtAt;
  return entry.changesAt === null || now < entry.changesAt;
}
