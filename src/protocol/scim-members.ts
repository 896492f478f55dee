// A Group's members, read from a POST or PUT and changed by a PATCH's operations, by member id
// rather than by scimmy: scimmy evaluates a filter path such as `members[value eq "…"]` against
// every member, for each operation, so removing 50 members of a group of 5,000 took seconds of
// the event loop and a crafted PATCH minutes; and it took 1.4 s and 100 MB of heap to read a
// group of 50,000 members. Everything else a request says of a group is left to scimmy.

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

/** What applyOne answers for an operation it applied whole (not null: a null operation is scimmy's to refuse). */
const APPLIED: unique symbol = Symbol('applied');

/** Applies, in order, the operations that add, remove or replace members. */
export function applyMemberOperations(members: readonly ScimMember[], operations: readonly unknown[]): MemberPatch {
  const byId = new Map(members.map((member) => [member.value, member] as const));
  const rest: unknown[] = [];
  for (const operation of operations) {
    const left = applyOne(byId, operation);
    if (left !== APPLIED) rest.push(left);
  }
  return { members: [...byId.values()], rest };
}

/** Applies one operation's part about members; answers what is left of it for scimmy, or APPLIED. */
function applyOne(byId: Map<string, ScimMember>, operation: unknown): unknown {
  if (typeof operation !== 'object' || operation === null) return operation;
  const { op, path, value } = operation as { op?: unknown; path?: unknown; value?: unknown };
  const kind = typeof op === 'string' ? op.toLowerCase() : null;
  if (kind !== 'add' && kind !== 'remove' && kind !== 'replace') return operation;
  if (typeof path === 'string') {
    const one = ONE_MEMBER_PATH.exec(path.trim());
    if (one !== null && kind === 'remove') {
      byId.delete(unquoted(one[1] ?? ''));
      return APPLIED;
    }
    if (!MEMBERS_PATH.test(path.trim())) return operation;
    change(byId, kind, value);
    return APPLIED;
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

function change(byId: Map<string, ScimMember>, kind: 'add' | 'remove' | 'replace', value: unknown): void {
  if (kind === 'remove' && value === undefined) {
    byId.clear();
    return;
  }
  const given = (Array.isArray(value) ? value : [value]).map(memberOf);
  if (kind === 'replace') byId.clear();
  for (const member of given) {
    if (kind === 'remove') byId.delete(member.value);
    else byId.set(member.value, member);
  }
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
    throw new MemberPatchError(`members: "${text}" is not a well-formed quoted value`);
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

/** An operation on members the group cannot take: a member without a User id, a malformed filter value. */
export class MemberPatchError extends Error {
  override readonly name = 'MemberPatchError';
}
