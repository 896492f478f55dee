// A Group's members, read from a POST or PUT and changed by a PATCH's operations, by member id
// rather than by scimmy: scimmy evaluates a filter path such as `members[value eq "…"]` against
// every member, for each operation, so removing 50 members of a group of 5,000 took seconds of
// the event loop and a crafted PATCH minutes; and it took 1.4 s and 100 MB of heap to read a
// group of 50,000 members. Any other filter of a members path is matched against the group's
// real members (scim-member-filter.ts); a members path no operation here applies is refused, never
// left to scimmy, which sees the group without its members and would answer it applied. Everything
// else a request says of a group is left to scimmy.
import { MemberFilterError, MemberIndex, selectedMembers } from './scim-member-filter.js';

/** A member as the group holds it. */
export interface ScimMember {
  readonly value: string;
  readonly display?: string;
}

/** What a PATCH left of the members, and its operations that are not about members (for scimmy). */
export interface MemberPatch {
  readonly members: readonly ScimMember[];
  readonly rest: readonly unknown[];
}

const MEMBERS_PATH = /^members$/i;
/** `members[value eq "ID"]`, the form Entra ID and Okta remove one member with. */
const ONE_MEMBER_PATH = /^members\[\s*value\s+eq\s+"((?:[^"\\]|\\.)*)"\s*\]$/i;
/** `members[FILTER]`, or `members[FILTER].SUB`: the filter, and the sub-attribute if any. */
const FILTERED_MEMBERS_PATH = /^members\[(.*)\](?:\.(.*))?$/is;
/** Any path about members (`members.value`, `members [..]`, URN-qualified): none is scimmy's. */
const ABOUT_MEMBERS_PATH = /^(?:urn:ietf:params:scim:schemas:core:2\.0:group:)?\s*members\b/i;

/** What applyOne answers for an operation it applied whole (not null: a null operation is scimmy's to refuse). */
const APPLIED: unique symbol = Symbol('applied');

/** Applies, in order, the operations that add, remove or replace members. */
export function applyMemberOperations(members: readonly ScimMember[], operations: readonly unknown[]): MemberPatch {
  const byId = new MemberIndex(members);
  const rest: unknown[] = [];
  for (const operation of operations) {
    const left = applyOne(byId, operation);
    if (left !== APPLIED) rest.push(left);
  }
  return { members: [...byId.values()], rest };
}

/** Applies one operation's part about members; answers what is left of it for scimmy, or APPLIED. */
function applyOne(byId: MemberIndex<ScimMember>, operation: unknown): unknown {
  if (typeof operation !== 'object' || operation === null) return operation;
  const { op, path, value } = operation as { op?: unknown; path?: unknown; value?: unknown };
  const kind = typeof op === 'string' ? op.toLowerCase() : null;
  if (kind !== 'add' && kind !== 'remove' && kind !== 'replace') return operation;
  if (typeof path === 'string') {
    const trimmed = path.trim();
    const one = ONE_MEMBER_PATH.exec(trimmed);
    if (one !== null && kind === 'remove') {
      byId.delete(unquoted(one[1] ?? ''));
      return APPLIED;
    }
    if (MEMBERS_PATH.test(trimmed)) {
      change(byId, kind, value);
      return APPLIED;
    }
    const filtered = FILTERED_MEMBERS_PATH.exec(trimmed);
    if (filtered !== null && filtered[2] === undefined && kind === 'remove') {
      removeSelected(byId, filtered[1] ?? '');
      return APPLIED;
    }
    if (filtered !== null || ABOUT_MEMBERS_PATH.test(trimmed)) throw unappliedMembersPath(trimmed, kind);
    return operation;
  }
  // No path: the value is a partial resource, whose `members` (any case) are this part.
  if (kind === 'remove' || typeof value !== 'object' || value === null || Array.isArray(value)) return operation;
  const entries = Object.entries(value as Record<string, unknown>);
  const membersEntry = entries.find(([name]) => MEMBERS_PATH.test(name));
  if (membersEntry === undefined) return operation;
  change(byId, kind, membersEntry[1]);
  const others = entries.filter(([name]) => !MEMBERS_PATH.test(name));
  return others.length === 0 ? APPLIED : { ...(operation as object), value: Object.fromEntries(others) };
}

function change(byId: MemberIndex<ScimMember>, kind: 'add' | 'remove' | 'replace', value: unknown): void {
  if (kind === 'remove' && value === undefined) {
    byId.clear();
    return;
  }
  const given = (Array.isArray(value) ? value : [value]).map(memberOf);
  if (kind === 'replace') byId.clear();
  for (const member of given) {
    if (kind === 'remove') byId.delete(member.value);
    else byId.set(member);
  }
}

/** Removes the members the filter selects (none selected: nobody to remove, as for `value eq` of one gone). */
function removeSelected(byId: MemberIndex<ScimMember>, filterText: string): void {
  let selected: readonly ScimMember[];
  try {
    selected = selectedMembers(filterText, byId);
  } catch (error) {
    if (error instanceof MemberFilterError) throw new MemberPatchError(error.message, error.scimType);
    throw error;
  }
  for (const member of selected) byId.delete(member.value);
}

/**
 * A members path the portal does not apply: a filter selects members only to remove them (RFC
 * 7644 would have `add` or `replace` through a filter change the selected members' sub-attributes,
 * and a member has none that may change), and a member's sub-attributes are not kept apart.
 */
function unappliedMembersPath(path: string, kind: 'add' | 'remove' | 'replace'): MemberPatchError {
  const why =
    kind === 'remove'
      ? 'a member is removed whole: give members[filter] or members, with no sub-attribute'
      : `${kind} does not take a filter or sub-attribute of members: add members with path "members" and a list of them, and replace one by removing it and adding the other`;
  return new MemberPatchError(`path "${path}": ${why}`, 'invalidPath');
}

/** The member ids of a Group's `members` as a POST or PUT gives them (none: no members), each once. */
export function readMembers(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new MemberPatchError('members: a list of members, each with the value of a User id');
  return [...new Set(value.map((entry) => memberOf(entry).value))];
}

/** The text of a filter's quoted value, its escapes read as JSON's. */
function unquoted(text: string): string {
  try {
    return JSON.parse(`"${text}"`) as string;
  } catch {
    throw new MemberPatchError(`members: "${text}" is not a well-formed string (a JSON string)`, 'invalidFilter');
  }
}

/** A member object; its keys in any case (RFC 7643 §2.1). */
function memberOf(entry: unknown): ScimMember {
  const named = (name: string): unknown =>
    typeof entry === 'object' && entry !== null
      ? Object.entries(entry).find(([key]) => key.toLowerCase() === name)?.[1]
      : undefined;
  const value = named('value');
  if (typeof value !== 'string' || value === '')
    throw new MemberPatchError('members: each member needs the value of a User id');
  const display = named('display');
  return typeof display === 'string' ? { value, display } : { value };
}

/** An operation on members the group cannot take: a member without a User id, a malformed filter, a path it does not apply. */
export class MemberPatchError extends Error {
  override readonly name = 'MemberPatchError';

  constructor(
    message: string,
    /** RFC 7644's detail error keyword of the refusal. */
    readonly scimType: 'invalidValue' | 'invalidFilter' | 'invalidPath' | 'tooMany' = 'invalidValue',
  ) {
    super(message);
  }
}
