// PostgreSQL parses and plans a statement sent without a name every time it runs. For the
// portal's frequent statements (a create's one WITH query, a disable's writes) that cost the
// server more than running them: a create took about 1.5 ms of server CPU unnamed and 0.5–0.7
// named, and the portal's own CPU fell by a fifth (bench/README.md, 30 November). A statement
// text seen again gets a name, so each connection parses it once and the server may keep a
// generic plan for it (it does when that plan is estimated no dearer than planning anew).
// Names are bounded: a portal that builds many texts holds at most MOST_NAMES prepared
// statements on each connection. When they are all given and a new text comes back, a new
// generation of names starts (at most once per GENERATION_AT_LEAST_MS): the names given so far
// are dropped, texts are named again as they come back, and each connection that prepared a
// dropped name is closed when it goes back to the pool, with all it prepared. So a text first
// met after months (a bulk revocation on a portal that never disabled anyone) is not sent
// unnamed for good. A statement with a long list of values (`in ($3, $4, …)`, more
// than LONGEST_NAMED_LIST) is never named: a generic plan for it went wrong. The wanted peers
// among a page of a thousand keys, after a node's restart, took 570 ms a page instead of a few,
// and the node's peers came back in 59 s instead of 6 (bench/README.md). Short lists (a user's
// few configurations in a disable) keep their names: without them a bulk revocation was 15 %
// slower.
import { monotonicNow } from '../shared/monotonic.js';
import { ConnectionLost } from './errors.js';

/** A text run this many times gets a name. */
const NAMED_AFTER = 2;
/** Names of one generation; a connection holds this many prepared statements at most (briefly more while a generation starts). */
export const MOST_NAMES = 200;
/** The least time between two generations: texts that outnumber the names cost each connection a reconnect at most this often. */
export const GENERATION_AT_LEAST_MS = 10 * 60_000;
/** Texts counted at most before the counts start over, so that texts seen once do not pile up. */
const MOST_COUNTED = 2_000;
/** Lists of values longer than this keep a statement unnamed. */
export const LONGEST_NAMED_LIST = 16;
/** A list of values in the text, as the query builder writes `where … in (…)`. */
const VALUE_LIST = /\bin \((\$\d+(?:, \$\d+)*)\)/gi;

/** The names of one pool's statements, shared by its connections (each prepares a name the first time it runs it). */
export class StatementNames {
  #names = new Map<string, string>();
  #counts = new Map<string, number>();
  /** Names given in all generations: a name is never given to two texts, so no connection can mistake one for another. */
  #given = 0;
  #generation = 1;
  #generationStarted: number;

  /**
   * `now` is in milliseconds, by default on the monotonic clock: a step of the wall clock must
   * neither keep the names full for as long as a step back, nor start generations sooner.
   */
  constructor(private readonly now: () => number = monotonicNow) {
    this.#generationStarted = now();
  }

  /** The generation the names given now belong to; a connection that prepared names of an earlier one is closed when released. */
  get generation(): number {
    return this.#generation;
  }

  /** The name to run `sql` under, or undefined: it is sent unnamed (seen once only, a long list of values, or no names left). */
  nameFor(sql: string): string | undefined {
    const named = this.#names.get(sql);
    if (named !== undefined) return named;
    if (longestValueList(sql) > LONGEST_NAMED_LIST) return undefined;
    const count = (this.#counts.get(sql) ?? 0) + 1;
    if (count < NAMED_AFTER) {
      if (this.#counts.size >= MOST_COUNTED) this.#counts = new Map();
      this.#counts.set(sql, count);
      return undefined;
    }
    if (this.#names.size >= MOST_NAMES && !this.#startGeneration()) return undefined;
    this.#counts.delete(sql);
    this.#given += 1;
    const name = `vpn_portal_${this.#given}`;
    this.#names.set(sql, name);
    return name;
  }

  /** Drops every name, unless the last generation started less than GENERATION_AT_LEAST_MS ago. */
  #startGeneration(): boolean {
    const now = this.now();
    if (now - this.#generationStarted < GENERATION_AT_LEAST_MS) return false;
    this.#names = new Map();
    this.#generation += 1;
    this.#generationStarted = now;
    return true;
  }
}

function longestValueList(sql: string): number {
  let longest = 0;
  for (const [, list = ''] of sql.matchAll(VALUE_LIST)) longest = Math.max(longest, list.split(',').length);
  return longest;
}

/**
 * A connection closed because a statement it prepared was stale (ClosingClient): the server
 * answered, so this is no outage (OutageWindow.staleConnection) and the call goes on at once.
 */
export function closedForStaleStatement(error: unknown): boolean {
  return error instanceof ConnectionLost && error.cause instanceof Error && isStalePreparedStatement(error.cause);
}

/**
 * The server refused a named statement its connection prepared earlier: a table it reads gained
 * or lost a column (another instance migrated the schema: "cached plan must not change result
 * type"), or the statement is gone from the session (a pooler in front of the server handed the
 * session to another client: "prepared statement … does not exist").
 */
export function isStalePreparedStatement(error: { readonly code?: unknown; readonly message: string }): boolean {
  return (
    error.code === '26000' ||
    (error.code === '0A000' && error.message.includes('cached plan must not change result type'))
  );
}
