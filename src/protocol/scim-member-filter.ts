// The members a PATCH's `members[<filter>]` path selects (RFC 7644 section 3.5.2.2), for a filter
// other than the one `value eq "…"` read by id in scim-members.ts: `value eq "a" or value eq "b"`,
// `display eq "alice"`, `not (value eq "a")`. scimmy parses the filter (into branches joined by
// `or`, each a set of comparisons joined by `and`; the shapes it misreads or takes too long over
// were refused before, scim-filter-shape.ts); the branches are matched here, against the
// group's members as its answers show them (value, display, type): scimmy's own matching took
// 3.5 seconds for one filter on a group of 100,000. A branch that asks for one value or one
// display by `eq` is looked up, the others go over the members once. A filter that cannot be
// parsed, or names what a member does not have, is refused rather than matched against nothing.
import SCIMMY from 'scimmy';

/** A member as the group holds it. */
export interface FilterableMember {
  readonly value: string;
  readonly display?: string;
}

/** Sub-attributes of a member a filter may name: those the group's answers show. */
type MemberAttribute = 'value' | 'display' | 'type';
const MEMBER_ATTRIBUTES: readonly MemberAttribute[] = ['value', 'display', 'type'];

const COMPARATORS = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le', 'pr', 'np'] as const;
type Comparator = (typeof COMPARATORS)[number];

/** One comparison of a branch: `[not] attribute comparator "expected"`. */
interface Comparison {
  readonly attribute: MemberAttribute;
  readonly negate: boolean;
  readonly comparator: Comparator;
  /** Lower-cased for an attribute compared without regard to case; undefined for pr and np. */
  readonly expected: string | undefined;
}

/**
 * Comparisons the filters of one PATCH may make going over a group's members (a member and a
 * comparison of its branch: one each); more is refused with tooMany. 100 filters of one
 * comparison each over 50,000 members (a second, on a slow core); a lookup by `value eq` or
 * `display eq` costs none.
 */
export const MAX_SCANNED_COMPARISONS = 5_000_000;

/** A filter of a members path that is not one: its text cannot be parsed, or it names what members lack. */
export class MemberFilterError extends Error {
  override readonly name = 'MemberFilterError';

  constructor(
    message: string,
    readonly scimType: 'invalidFilter' | 'tooMany' = 'invalidFilter',
  ) {
    super(message);
  }
}

/**
 * A group's members by id as a PATCH changes them, and by display (lower-cased) once a filter
 * asks for one; with what is left of the request's budget of scanned comparisons.
 */
export class MemberIndex<M extends FilterableMember> {
  readonly #byId: Map<string, M>;
  #byDisplay: Map<string, Set<M>> | null = null;
  #comparisonsLeft: number;

  constructor(members: Iterable<M>, comparisonBudget = MAX_SCANNED_COMPARISONS) {
    this.#byId = new Map([...members].map((member) => [member.value, member] as const));
    this.#comparisonsLeft = comparisonBudget;
  }

  get(value: string): M | undefined {
    return this.#byId.get(value);
  }

  get size(): number {
    return this.#byId.size;
  }

  values(): IterableIterator<M> {
    return this.#byId.values();
  }

  set(member: M): void {
    this.delete(member.value);
    this.#byId.set(member.value, member);
    this.#displayed(member, (same) => same.add(member));
  }

  delete(value: string): void {
    const member = this.#byId.get(value);
    if (member === undefined) return;
    this.#byId.delete(value);
    this.#displayed(member, (same) => same.delete(member));
  }

  clear(): void {
    this.#byId.clear();
    this.#byDisplay = null;
  }

  /** The members whose display, lower-cased, is `display`. */
  withDisplay(display: string): Iterable<M> {
    if (this.#byDisplay === null) {
      this.#byDisplay = new Map();
      for (const member of this.#byId.values()) this.#displayed(member, (same) => same.add(member));
    }
    return this.#byDisplay.get(display) ?? [];
  }

  /** Takes `count` comparisons of the budget; refused once it is spent. */
  spend(count: number, text: string): void {
    this.#comparisonsLeft -= count;
    if (this.#comparisonsLeft < 0)
      throw new MemberFilterError(
        `members[${text}]: the filters of this request compare more than ${MAX_SCANNED_COMPARISONS.toLocaleString('en')} member attributes; remove members by value eq "…" or display eq "…", or in several requests`,
        'tooMany',
      );
  }

  #displayed(member: M, change: (same: Set<M>) => void): void {
    if (this.#byDisplay === null || member.display === undefined) return;
    const key = member.display.toLowerCase();
    let same = this.#byDisplay.get(key);
    if (same === undefined) {
      same = new Set();
      this.#byDisplay.set(key, same);
    }
    change(same);
  }
}

/**
 * Of the group's members, those the filter text (between the brackets of `members[…]`) selects.
 * `value` is compared exactly, as the portal hands out the ids; `display` (the member's
 * userName) and `type` (always "User") without regard to case, as RFC 7643 has them.
 */
export function selectedMembers<M extends FilterableMember>(filterText: string, members: MemberIndex<M>): M[] {
  const selected = new Set<M>();
  const scanned: Comparison[][] = [];
  for (const branch of parsedBranches(filterText)) {
    const byValue = branch.find((comparison) => isLookup(comparison, 'value'));
    const byDisplay = byValue === undefined ? branch.find((comparison) => isLookup(comparison, 'display')) : undefined;
    if (byValue === undefined && byDisplay === undefined) {
      scanned.push(branch);
      continue;
    }
    const member = byValue === undefined ? undefined : members.get(byValue.expected ?? '');
    const candidates =
      byDisplay === undefined ? (member === undefined ? [] : [member]) : members.withDisplay(byDisplay.expected ?? '');
    for (const candidate of candidates)
      if (holdsAll(branch, candidate.value, candidate.display?.toLowerCase())) selected.add(candidate);
  }
  if (scanned.length === 0) return [...selected];
  // The branches no lookup answers, in one pass over the members.
  members.spend(scanned.reduce((sum, branch) => sum + branch.length, 0) * members.size, filterText);
  for (const member of members.values()) {
    const display = member.display?.toLowerCase();
    if (scanned.some((branch) => holdsAll(branch, member.value, display))) selected.add(member);
  }
  return [...selected];
}

function holdsAll(branch: readonly Comparison[], value: string, display: string | undefined): boolean {
  return branch.every((comparison) => holds(comparison, value, display));
}

function isLookup(comparison: Comparison, attribute: MemberAttribute): boolean {
  return comparison.attribute === attribute && comparison.comparator === 'eq' && !comparison.negate;
}

function holds(comparison: Comparison, value: string, display: string | undefined): boolean {
  const actual = comparison.attribute === 'value' ? value : comparison.attribute === 'display' ? display : 'user';
  const result = compared(comparison.comparator, actual, comparison.expected ?? '');
  return comparison.negate ? !result : result;
}

function compared(comparator: Comparator, actual: string | undefined, expected: string): boolean {
  if (comparator === 'pr') return actual !== undefined && actual !== '';
  if (comparator === 'np') return actual === undefined || actual === '';
  if (actual === undefined) return comparator === 'ne';
  switch (comparator) {
    case 'eq':
      return actual === expected;
    case 'ne':
      return actual !== expected;
    case 'co':
      return actual.includes(expected);
    case 'sw':
      return actual.startsWith(expected);
    case 'ew':
      return actual.endsWith(expected);
    case 'gt':
      return actual > expected;
    case 'lt':
      return actual < expected;
    case 'ge':
      return actual >= expected;
    case 'le':
      return actual <= expected;
  }
}

/** The filter as branches (joined by `or`) of comparisons (joined by `and`), each checked. */
function parsedBranches(text: string): Comparison[][] {
  let branches: unknown[];
  try {
    // As plain data: scimmy's expression objects are frozen and trapped.
    branches = JSON.parse(JSON.stringify(new SCIMMY.Types.Filter(text))) as unknown[];
  } catch (error) {
    throw new MemberFilterError(
      `members[${text}]: not a filter this portal can read (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  return branches.map((branch) =>
    Object.entries(branch as Record<string, unknown>).flatMap(([name, comparisons]) => {
      const attribute = MEMBER_ATTRIBUTES.find((known) => known === name.toLowerCase());
      if (attribute === undefined)
        throw new MemberFilterError(
          `members[${text}]: a member has no attribute "${name}"; a filter may name value, display and type`,
        );
      // One comparison, or several of the same attribute joined by `and`.
      const list = Array.isArray(comparisons) && comparisons.some(Array.isArray) ? comparisons : [comparisons];
      return list.map((comparison: unknown) => comparisonOf(attribute, comparison, text));
    }),
  );
}

/** scimmy's `[not?, comparator, expected?]`, its string read as JSON reads one (`\u00e9` is é). */
function comparisonOf(attribute: MemberAttribute, parts: unknown, text: string): Comparison {
  const refused = (why: string) => new MemberFilterError(`members[${text}]: ${why}`);
  if (!Array.isArray(parts)) throw refused(`"${attribute}" of a member has no attributes of its own`);
  const negate = typeof parts[0] === 'string' && parts[0].toLowerCase() === 'not';
  const [name, expected, ...more] = parts.slice(negate ? 1 : 0) as unknown[];
  const comparator = COMPARATORS.find((known) => typeof name === 'string' && known === name.toLowerCase());
  if (comparator === undefined || more.length > 0) throw refused('not a comparison of a member attribute');
  if (comparator === 'pr' || comparator === 'np') {
    if (expected !== undefined) throw refused(`${comparator} takes no value`);
    return { attribute, negate, comparator, expected: undefined };
  }
  if (typeof expected !== 'string') throw refused(`${attribute} ${comparator} needs a quoted string to compare with`);
  let decoded: string;
  try {
    decoded = JSON.parse(`"${expected}"`) as string;
  } catch {
    throw refused(`"${expected}" is not a well-formed string (a JSON string)`);
  }
  return { attribute, negate, comparator, expected: attribute === 'value' ? decoded : decoded.toLowerCase() };
}
