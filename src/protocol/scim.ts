// SCIM 2.0 (RFC 7643 resources, RFC 7644 protocol) as the portal's SCIM service provider speaks
// it: the User and Group resources read from a directory's requests (through scimmy's schemas,
// which also apply PATCH operations and parse filters), written back, and the messages around
// them (list, error). Pure: no database, no HTTP; src/http/scim/ serves it, src/core/directory/
// maps it to users and profiles. Provisioning clients are lenient about what they send: Entra ID
// writes booleans as "True"/"False", operations as "Replace", and values without a path;
// those are read as the RFC would have them before scimmy sees them.
import SCIMMY from 'scimmy';
import { applyMemberOperations, MemberPatchError, readMembers, type MemberPatch } from './scim-members.js';
import { filterShape } from './scim-filter-shape.js';
import { AttributeGivenTwiceError, canonicalOperation, canonicalResource } from './scim-paths.js';
import { param } from './admin-api-params.js';
import { unstorableTextIn } from '../shared/storable-text.js';

export const SCIM_CONTENT_TYPE = 'application/scim+json';
export const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const SCIM_LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const SCIM_USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const SCIM_GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';

export const SCIM_ENTERPRISE_USER_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

// Entra ID's and Okta's default mappings send the enterprise extension (department,
// employeeNumber, manager): the User schema takes it, so a PATCH of one of its attributes is
// kept like any other attribute instead of failing the whole request. Extending again is harmless.
// (scimmy's typings name a schema instance; its code and documentation take the class.)
SCIMMY.Schemas.User.extend(SCIMMY.Schemas.EnterpriseUser as unknown as SCIMMY.Types.Schema);

/** The most resources one list answer holds; a client asking for more gets this many (RFC 7644 §3.4.2.4). */
export const SCIM_MAX_PAGE = 200;

/**
 * Members one group may hold: 50,000 (a large organisation's "all staff") and twice that. A group
 * is read whole for every request about it, in a portal whose heap is 192 MB.
 */
export const MAX_GROUP_MEMBERS = 100_000;
/**
 * What the portal keeps of one user besides its name (its attributes, as JSON), at most: a
 * directory's user with its enterprise extension is a few KiB. Without a bound one user could
 * hold megabytes, and a page of 200 of them fill the portal's heap.
 */
export const MAX_USER_ATTRIBUTES_BYTES = 64 * 1024;
/** An externalId longer than this is no directory's id. */
export const MAX_EXTERNAL_ID_CHARACTERS = 1_024;
/**
 * A PatchOp path longer than this is refused before its filter is parsed: the parser's time grows
 * faster than the filter (seconds for a megabyte), and no directory sends more than a few dozen
 * characters.
 */
export const MAX_PATCH_PATH_CHARACTERS = 1_024;

/**
 * Comparisons the filters of one PATCH may hold together. scimmy's time grows with the square of
 * a filter's comparisons; a directory's removal of members by `value eq "…"`, one per operation,
 * needs one each. The worst request within it took some 40 ms here (130 ms with 100 operations
 * going over a group of 1,000 members).
 */
export const MAX_PATCH_FILTER_COMPARISONS = 200;

/**
 * A list's `filter` longer than this is refused before it is read. An externalId of
 * MAX_EXTERNAL_ID_CHARACTERS, each of them written as a `\uXXXX` escape behind the URN-qualified
 * name, is some 6,200 characters; a directory escapes only `"`, `\` and control characters.
 */
export const MAX_LIST_FILTER_CHARACTERS = 8_192;
/**
 * Words (a string, a bracket, or a run of other characters) a Group list's filter may hold: the
 * membership check with URN-qualified names holds ten, and no filter of more is answered.
 */
export const MAX_GROUP_FILTER_WORDS = 32;

/** Operations one PATCH may hold: directories send a few per change (Entra ID, Okta: one per attribute or member batch). */
export const MAX_PATCH_OPERATIONS = 100;

/** RFC 7644 §3.12's detail error keywords the portal answers with. */
export type ScimType =
  | 'invalidFilter'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidValue'
  | 'invalidPath'
  | 'noTarget'
  | 'tooMany';

/** A request the portal refuses, with its HTTP status and SCIM detail keyword. */
export class ScimProblem extends Error {
  override readonly name = 'ScimProblem';

  constructor(
    readonly status: number,
    readonly scimType: ScimType | null,
    message: string,
  ) {
    super(message);
  }
}

/** RFC 7644 §3.12: the body of every error answer (`status` is a string). */
export function scimErrorBody(status: number, scimType: ScimType | null, detail: string): Record<string, unknown> {
  return {
    schemas: [SCIM_ERROR_SCHEMA],
    status: String(status),
    ...(scimType === null ? {} : { scimType }),
    detail,
  };
}

/** A User as a request gives it: the portal's user id, the directory's id, the state, and what else it said. */
export interface ScimUserInput {
  readonly userName: string;
  readonly externalId: string | null;
  /** null: the request does not say (no `active`, or null, or removed by a PATCH): nothing changes. */
  readonly active: boolean | null;
  /** The other attributes of the core User schema the request held (name, emails, …), as scimmy read them. */
  readonly attributes: Readonly<Record<string, unknown>>;
}

/** A Group as a request gives it: its name, the directory's id, and its members' SCIM ids. */
export interface ScimGroupInput {
  readonly displayName: string;
  readonly externalId: string | null;
  readonly memberIds: readonly string[];
}

/** A stored user as a response shows it. */
export interface ScimUserView extends ScimUserInput {
  readonly id: string;
  readonly created: string;
  readonly lastModified: string;
}

/** A member as a Group resource shows it: the SCIM user's id and its portal user id. */
export interface ScimGroupMemberView {
  readonly value: string;
  readonly display: string;
}

/** A stored group as a response shows it. */
export interface ScimGroupView {
  readonly id: string;
  readonly displayName: string;
  readonly externalId: string | null;
  /** null: left out of the answer (not asked for, or past a list answer's MAX_LISTED_MEMBERS). */
  readonly members: readonly ScimGroupMemberView[] | null;
  readonly created: string;
  readonly lastModified: string;
}

/**
 * Members one list answer (`GET /Groups`) holds at most, of all its groups together: a page of
 * 200 groups of 100,000 members each would be 20 million. Groups are filled in page order; one
 * whose members do not fit any more is listed without `members` (RFC 7644 §3.4.2 lets a server
 * leave attributes out), to be read by `GET /Groups/{id}`, as Entra ID and Okta do anyway.
 */
export const MAX_LISTED_MEMBERS = 10_000;

/** Which attributes of a Group an answer holds (RFC 7644 §3.4.2.5, §3.9); `id`, `schemas` and `meta` always. */
export interface GroupAttributeSelection {
  readonly displayName: boolean;
  readonly externalId: boolean;
  readonly members: boolean;
}

const EVERY_GROUP_ATTRIBUTE: GroupAttributeSelection = { displayName: true, externalId: true, members: true };

/** Attributes of type boolean in the User and Group schemas: Entra ID sends them as strings. */
const BOOLEAN_ATTRIBUTES = new Set(['active', 'primary']);
/** What the portal owns or never keeps; the rest of a User is kept as sent. */
const NOT_KEPT = new Set(['schemas', 'id', 'meta', 'userName', 'externalId', 'active', 'password', 'groups']);

/**
 * Refuses a request body with a string or key no database stores as it is (a NUL character, a
 * lone surrogate: src/shared/storable-text.ts). No directory means either.
 */
export function assertStorableText(body: unknown): void {
  const problem = unstorableTextIn(body);
  if (problem !== null) throw new ScimProblem(400, 'invalidValue', `the request holds ${problem}`);
}

/**
 * A User resource of a POST or PUT, its attribute names read as a PATCH value's are (any case,
 * a core name also URN-qualified: scim-paths.ts); scimmy alone would drop
 * `urn:ietf:params:scim:schemas:core:2.0:User:active` and keep the user active.
 */
export function readUser(body: unknown, current: ScimUserView | null = null): ScimUserInput {
  const resource = coerced(() => {
    const user = canonicalResource(objectBody(body), SCIMMY.Schemas.User.definition);
    return new SCIMMY.Schemas.User(withBooleans(withManagerObjects(user)), 'in');
  });
  return userInputOf(resource, current);
}

/** A Group's members keep their own spelling: readMembers reads them, by id, in any case. */
const GROUP_MEMBERS = new Set(['members']);

/**
 * A Group resource of a POST or PUT, its attribute names read as a User's are. Its members are
 * read here, by id (scimmy took 1.4 s and 100 MB of heap for 50,000 of them); scimmy reads the
 * rest of the group.
 */
export function readGroup(body: unknown, current: ScimGroupView | null = null): ScimGroupInput {
  const { members, ...rest } = coerced(() =>
    canonicalResource(objectBody(body), SCIMMY.Schemas.Group.definition, GROUP_MEMBERS),
  );
  let memberIds: string[];
  try {
    memberIds = readMembers(members);
  } catch (error) {
    if (error instanceof MemberPatchError) throw new ScimProblem(400, error.scimType, error.message);
    throw error;
  }
  const resource = coerced(() => new SCIMMY.Schemas.Group(withBooleans(rest), 'in'));
  return groupInputOf(resource, memberIds, current);
}

/**
 * The user after a PatchOp request (RFC 7644 §3.5.2) on `current`. Its `active` says something
 * only when an operation named it: a PATCH of the title carries no `active`, so that it never
 * enables a user the directory disabled meanwhile (nor disables one).
 */
export async function patchUser(current: ScimUserView, body: unknown, location: string): Promise<ScimUserInput> {
  const request = patchRequest(body);
  const operations = operationsOf(request).map((operation) =>
    addingMissingEntry(withManagerObject(operationOf(operation, SCIMMY.Schemas.User.definition)), current.attributes),
  );
  const patch = patchOfOperations(request, operations);
  const resource = new SCIMMY.Schemas.User(userResource(current, location), 'out');
  const input = userInputOf(await applied(patch, resource), current);
  return operations.some(namesActive) ? input : { ...input, active: null };
}

/** True for an operation on `active`: by its path, or, without one, by its value's `active`. */
function namesActive(operation: unknown): boolean {
  if (typeof operation !== 'object' || operation === null) return false;
  const { path, value } = operation as { path?: unknown; value?: unknown };
  if (typeof path === 'string' && path.toLowerCase() !== SCIM_USER_SCHEMA.toLowerCase())
    return path.toLowerCase() === 'active';
  return typeof value === 'object' && value !== null && Object.hasOwn(value, 'active');
}

/**
 * The group after a PatchOp request on `current`. Its operations on members are applied here, by
 * member id (src/protocol/scim-members.ts); scimmy applies the rest to the group without members.
 */
export async function patchGroup(current: ScimGroupView, body: unknown, location: string): Promise<ScimGroupInput> {
  const request = patchRequest(body);
  let members: MemberPatch;
  try {
    const operations = operationsOf(request).map((operation) =>
      operationOf(operation, SCIMMY.Schemas.Group.definition),
    );
    members = applyMemberOperations(current.members ?? [], operations);
  } catch (error) {
    if (error instanceof MemberPatchError) throw new ScimProblem(400, error.scimType, error.message);
    throw error;
  }
  let resource = new SCIMMY.Schemas.Group(groupResource({ ...current, members: [] }, location), 'out');
  if (members.rest.length > 0) resource = await applied(patchOfOperations(request, members.rest), resource);
  return groupInputOf(
    resource,
    members.members.map((member) => member.value),
    current,
  );
}

export function userResource(user: ScimUserView, location: string): Record<string, unknown> {
  return {
    ...user.attributes,
    schemas: [
      SCIM_USER_SCHEMA,
      ...(Object.hasOwn(user.attributes, SCIM_ENTERPRISE_USER_SCHEMA) ? [SCIM_ENTERPRISE_USER_SCHEMA] : []),
    ],
    id: user.id,
    ...(user.externalId === null ? {} : { externalId: user.externalId }),
    userName: user.userName,
    active: user.active,
    meta: { resourceType: 'User', created: user.created, lastModified: user.lastModified, location },
  };
}

export function groupResource(
  group: ScimGroupView,
  location: string,
  selection: GroupAttributeSelection = EVERY_GROUP_ATTRIBUTE,
): Record<string, unknown> {
  return {
    schemas: [SCIM_GROUP_SCHEMA],
    id: group.id,
    ...(group.externalId === null || !selection.externalId ? {} : { externalId: group.externalId }),
    ...(selection.displayName ? { displayName: group.displayName } : {}),
    ...(group.members === null || !selection.members
      ? {}
      : { members: group.members.map((member) => ({ ...member, type: 'User' })) }),
    meta: { resourceType: 'Group', created: group.created, lastModified: group.lastModified, location },
  };
}

/** Members written to one piece of groupResourceText. */
const MEMBERS_PER_PIECE = 1000;

/**
 * The Group resource as JSON text, in pieces: its members MEMBERS_PER_PIECE at a time, so a
 * group of 100,000 is sent without its resource built as objects and text whole beside them.
 */
export function* groupResourceText(
  group: ScimGroupView,
  location: string,
  selection: GroupAttributeSelection = EVERY_GROUP_ATTRIBUTE,
): Generator<string> {
  const outline = JSON.stringify(groupResource({ ...group, members: null }, location, selection));
  const members = selection.members ? group.members : null;
  if (members === null) {
    yield outline;
    return;
  }
  // `meta` is the last key; its strings escape every quote, so this is the key itself.
  const metaAt = outline.lastIndexOf(',"meta":');
  yield `${outline.slice(0, metaAt)},"members":[`;
  for (let start = 0; start < members.length; start += MEMBERS_PER_PIECE) {
    const piece = members
      .slice(start, start + MEMBERS_PER_PIECE)
      .map(
        (member) =>
          `{"value":${JSON.stringify(member.value)},"display":${JSON.stringify(member.display)},"type":"User"}`,
      )
      .join(',');
    yield start === 0 ? piece : `,${piece}`;
  }
  yield `]${outline.slice(metaAt)}`;
}

/**
 * `attributes` or `excludedAttributes` (RFC 7644 §3.4.2.5: comma-separated, case-insensitive,
 * URN-qualified or not, a sub-attribute naming its attribute) as the Group attributes an answer
 * holds; names the Group schema does not have are ignored, as are `id`, `schemas` and `meta`.
 */
export function readGroupAttributes(query: unknown): GroupAttributeSelection {
  const values = (typeof query === 'object' && query !== null ? query : {}) as Record<string, unknown>;
  const names = (parameter: string): Set<string> | null => {
    const text = values[parameter];
    if (text === undefined) return null;
    if (typeof text !== 'string') throw new ScimProblem(400, 'invalidValue', `${parameter}: ${notOneText(text)}`);
    const prefix = `${SCIM_GROUP_SCHEMA.toLowerCase()}:`;
    return new Set(
      text.split(',').map((name) => {
        const lower = name.trim().toLowerCase();
        return (lower.startsWith(prefix) ? lower.slice(prefix.length) : lower).split('.')[0] ?? '';
      }),
    );
  };
  const only = names('attributes');
  const excluded = names('excludedAttributes');
  if (only !== null && excluded !== null)
    throw new ScimProblem(400, 'invalidValue', 'give attributes or excludedAttributes, not both');
  const wanted = (name: string): boolean =>
    only !== null ? only.has(name.toLowerCase()) : !(excluded?.has(name.toLowerCase()) ?? false);
  return { displayName: wanted('displayName'), externalId: wanted('externalId'), members: wanted('members') };
}

/** RFC 7644 §3.4.2: a page of resources; `startIndex` counts from 1. */
export function listResponse(
  resources: readonly Record<string, unknown>[],
  totalResults: number,
  startIndex: number,
): Record<string, unknown> {
  return {
    schemas: [SCIM_LIST_SCHEMA],
    totalResults,
    startIndex,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}

/** What a list request may ask (RFC 7644 §3.4.2): the page, and the one equality filter the portal answers. */
export interface ScimListQuery {
  readonly startIndex: number;
  readonly count: number;
  /** `attribute eq "value"`; null: every resource. */
  readonly filter: { readonly attribute: string; readonly value: string } | null;
}

/**
 * What the list of one resource type may be filtered on: equality on `attributes` of its core
 * schema, each named bare or qualified by that schema's URN (RFC 7644 §3.10:
 * `urn:ietf:params:scim:schemas:core:2.0:User:userName`). The extensions' URNs are known too,
 * though none of their attributes is filterable: a filter on one is refused as any other
 * attribute would be, and one qualified by a URN of no schema of the resource says so.
 */
export interface ScimFilterable {
  readonly schemas: readonly [core: string, ...extensions: string[]];
  readonly attributes: readonly string[];
  /** Filters of another form the list also answers, as a refusal names them. */
  readonly alsoSupported?: readonly string[];
}

export const USER_FILTERABLE: ScimFilterable = {
  schemas: [SCIM_USER_SCHEMA, SCIM_ENTERPRISE_USER_SCHEMA],
  attributes: ['userName', 'externalId'],
};

export const GROUP_FILTERABLE: ScimFilterable = {
  schemas: [SCIM_GROUP_SCHEMA],
  attributes: ['displayName'],
  alsoSupported: ['members eq "…"', 'id eq "…" and members eq "…"'],
};

/**
 * Reads `filter`, `startIndex` and `count`. The filters provisioning clients send to find a
 * resource are equality on one attribute (`userName eq "…"`, `externalId eq "…"`,
 * `displayName eq "…"`); `filterable` names those the portal answers (attribute names are
 * matched without regard to case, as the RFC says, bare or URN-qualified), any other filter is
 * a 400 invalidFilter.
 */
export function readListQuery(query: unknown, filterable: ScimFilterable): ScimListQuery {
  const { startIndex, count, filterText } = listParameters(query);
  return { startIndex, count, filter: filterText === null ? null : equalityFilter(filterText, filterable) };
}

/**
 * What a Group list holds: those of one displayName (in any case: RFC 7643 makes it not
 * case-exact), those a user is a member of, or one group if a user is its member.
 */
export type ScimGroupFilter =
  | { readonly displayName: string }
  | { readonly memberId: string }
  | { readonly scimId: string; readonly memberId: string };

export interface ScimGroupListQuery {
  readonly startIndex: number;
  readonly count: number;
  readonly filter: ScimGroupFilter | null;
}

/**
 * readListQuery for `/Groups`, which also answers which groups a user is in (`members eq "…"`)
 * and a directory's membership check (`id eq "…" and members eq "…"`, in either order); the
 * member also written `members.value eq "…"` or `members[value eq "…"]`, names in any case,
 * `members` also URN-qualified.
 */
export function readGroupListQuery(query: unknown): ScimGroupListQuery {
  const { startIndex, count, filterText } = listParameters(query);
  if (filterText === null) return { startIndex, count, filter: null };
  const membership = membershipFilter(filterText);
  if (membership !== null) return { startIndex, count, filter: membership };
  return { startIndex, count, filter: { displayName: equalityFilter(filterText, GROUP_FILTERABLE).value } };
}

function listParameters(query: unknown): { startIndex: number; count: number; filterText: string | null } {
  const values = (typeof query === 'object' && query !== null ? query : {}) as Record<string, unknown>;
  const startIndex = positiveInteger(values['startIndex'], 'startIndex', 1);
  const count = Math.min(positiveInteger(values['count'], 'count', SCIM_MAX_PAGE, 0), SCIM_MAX_PAGE);
  const filterText = values['filter'];
  if (filterText === undefined) return { startIndex, count, filterText: null };
  if (typeof filterText !== 'string') throw new ScimProblem(400, 'invalidFilter', `filter: ${notOneText(filterText)}`);
  if (filterText.length > MAX_LIST_FILTER_CHARACTERS)
    throw new ScimProblem(
      400,
      'invalidFilter',
      `filter: ${filterText.length} characters, more than ${MAX_LIST_FILTER_CHARACTERS.toLocaleString('en')}`,
    );
  return { startIndex, count, filterText };
}

/** `members[value eq "…"]`, the member's id as written (a JSON string). */
const MEMBER_VALUE_PATH = /^members\[\s*value\s+eq\s+("(?:[^"\\]|\\.)*")\s*\]$/is;

/**
 * `members eq "U"` as the groups U is a member of; `id eq "G" and members eq "U"` (or the member
 * first) as the group G if it has the member U; null for any other filter, to be read as an
 * equality (and refused as one, if it is not).
 */
function membershipFilter(text: string): { memberId: string } | { scimId: string; memberId: string } | null {
  const terms = andTerms(text);
  if (terms === null) return null;
  if (terms.length === 1) {
    const alone = membershipTerm(terms[0] ?? '');
    return alone?.kind === 'member' ? { memberId: alone.value } : null;
  }
  if (terms.length !== 2) return null;
  const read = terms.map(membershipTerm);
  const id = read.find((term) => term?.kind === 'id')?.value;
  const member = read.find((term) => term?.kind === 'member')?.value;
  return id === undefined || member === undefined ? null : { scimId: id, memberId: member };
}

/** One side of a membership check: `id eq "…"`, or a member in one of its three spellings; null for anything else. */
function membershipTerm(term: string): { kind: 'id' | 'member'; value: string } | null {
  const prefix = `${SCIM_GROUP_SCHEMA.toLowerCase()}:`;
  const bare = term.toLowerCase().startsWith(prefix) ? term.slice(prefix.length) : term;
  const path = MEMBER_VALUE_PATH.exec(bare);
  if (path !== null) {
    const value = filterString(path[1] ?? '');
    return value === null ? null : { kind: 'member', value };
  }
  const [name = '', operator = '', valueText = ''] = filterParts(bare) ?? [];
  if (operator.toLowerCase() !== 'eq') return null;
  const kind =
    bare === term && name.toLowerCase() === 'id'
      ? 'id'
      : ['members', 'members.value'].includes(name.toLowerCase())
        ? 'member'
        : null;
  const value = filterString(valueText);
  return kind === null || value === null ? null : { kind, value };
}

/** A filter's value that is one JSON string and nothing after it; null otherwise. */
function filterString(valueText: string): string | null {
  if (!valueText.startsWith('"')) return null;
  const end = closingQuote(valueText);
  if (end === -1 || valueText.slice(end + 1).trim() !== '') return null;
  try {
    const value: unknown = JSON.parse(valueText.slice(0, end + 1));
    return typeof value === 'string' && !value.includes('\0') ? value : null;
  } catch {
    return null;
  }
}

/**
 * The filter split at each `and` outside strings and brackets (`members[value eq "a and b"]` is
 * one term); one term when it has none; null when a string is never closed or a bracket is not
 * matched (no membership filter: the filter is then read as an equality, and refused as one).
 * Read in one pass as words: a JSON string (its `\"` and `\\` escapes skipped), `[`, `]`, or a
 * run of anything else up to white space, a quote or a bracket; `and` in any case is such a run
 * of its own. A filter of more words than MAX_GROUP_FILTER_WORDS is refused.
 */
function andTerms(text: string): string[] | null {
  const terms: string[] = [];
  let start = 0;
  let depth = 0;
  let words = 0;
  let index = 0;
  while (index < text.length) {
    const char = text[index] ?? '';
    if (/\s/.test(char)) {
      index += 1;
      continue;
    }
    words += 1;
    if (words > MAX_GROUP_FILTER_WORDS)
      throw new ScimProblem(
        400,
        'invalidFilter',
        `filter: more than ${MAX_GROUP_FILTER_WORDS} words (a string or a bracket is one); the filters a Group list answers hold at most ten`,
      );
    if (char === '"') {
      const end = closingQuote(text, index);
      if (end === -1) return null;
      index = end + 1;
    } else if (char === '[' || char === ']') {
      depth += char === '[' ? 1 : -1;
      if (depth < 0) return null;
      index += 1;
    } else {
      const end = endOfWord(text, index);
      if (depth === 0 && end - index === 3 && text.slice(index, end).toLowerCase() === 'and') {
        terms.push(text.slice(start, index).trim());
        start = end;
      }
      index = end;
    }
  }
  if (depth !== 0) return null;
  terms.push(text.slice(start).trim());
  return terms;
}

/** Where the word that starts at `from` ends: at white space, a quote, a bracket, or the end. */
function endOfWord(text: string, from: number): number {
  let index = from;
  while (index < text.length && !/[\s"[\]]/.test(text[index] ?? '')) index += 1;
  return index;
}

/**
 * `attribute op value`, each part as written; the value is the rest, up to trailing spaces.
 * Read by hand in one pass: a regular expression of the same (`^\s*(\S+)\s+(\S+)\s+(.*?)\s*$`)
 * took time quadratic in the spaces of a value (16,000 of them: 200 ms).
 */
function filterParts(text: string): [name: string, operator: string, value: string] | null {
  const trimmed = text.trim();
  const firstSpace = trimmed.search(/\s/);
  if (firstSpace === -1) return null;
  const afterName = trimmed.slice(firstSpace).trimStart();
  const secondSpace = afterName.search(/\s/);
  if (secondSpace === -1) return null;
  return [trimmed.slice(0, firstSpace), afterName.slice(0, secondSpace), afterName.slice(secondSpace).trimStart()];
}

/**
 * `attribute eq "value"` on one of `filterable`. The value is a JSON string (RFC 7644 §3.4.2.2),
 * its escapes (`\"`, `\\`, `\u00e9`, …) read as JSON reads them; a string that is not
 * well-formed is a 400 invalidFilter, as is any other filter.
 */
function equalityFilter(text: string, filterable: ScimFilterable): { attribute: string; value: string } {
  const unsupported = new ScimProblem(
    400,
    'invalidFilter',
    `filter: only ${filterable.attributes.map((one) => `${one} eq "…"`).join(' or ')} is supported${
      filterable.alsoSupported === undefined ? '' : `, and ${filterable.alsoSupported.join(', ')}`
    }`,
  );
  const [name = '', operator = '', valueText = ''] = filterParts(text) ?? [];
  const attribute = filterableAttribute(name, filterable);
  if (attribute === undefined || operator.toLowerCase() !== 'eq' || !valueText.startsWith('"')) throw unsupported;
  const end = closingQuote(valueText);
  if (end !== -1 && valueText.slice(end + 1).trim() !== '') throw unsupported;
  let value: unknown;
  try {
    value = end === -1 ? undefined : JSON.parse(valueText.slice(0, end + 1));
  } catch {
    // Not well-formed: an unknown escape (`\q`), a short `\u`, a control character.
  }
  if (typeof value !== 'string')
    throw new ScimProblem(
      400,
      'invalidFilter',
      `filter: ${valueText} is not a well-formed string (a JSON string: write " as \\" and \\ as \\\\)`,
    );
  if (value.includes('\0'))
    throw new ScimProblem(400, 'invalidFilter', 'filter: the value holds a NUL character (\\u0000)');
  return { attribute, value };
}

/**
 * The attribute of `filterable` that a filter's attribute name is, bare or qualified by the core
 * schema's URN, in any case; undefined for any other (an extension's too). A URN of no schema of
 * the resource is refused as such.
 */
function filterableAttribute(name: string, filterable: ScimFilterable): string | undefined {
  let bare = name.toLowerCase();
  if (bare.startsWith('urn:')) {
    const schema = filterable.schemas.find((urn) => bare.startsWith(`${urn.toLowerCase()}:`));
    if (schema === undefined)
      throw new ScimProblem(
        400,
        'invalidFilter',
        `filter: the attribute's URN is of no schema of this resource (${filterable.schemas.join(', ')})`,
      );
    if (schema !== filterable.schemas[0]) return undefined;
    bare = bare.slice(schema.length + 1);
  }
  return filterable.attributes.find((attribute) => attribute.toLowerCase() === bare);
}

/** Where the string that opens `text` at `from` ends (a `"` no backslash escapes); -1 if it never does. */
function closingQuote(text: string, from = 0): number {
  for (let index = from + 1; index < text.length; index += 1) {
    if (text[index] === '\\') index += 1;
    else if (text[index] === '"') return index;
  }
  return -1;
}

/** The ServiceProviderConfig resource (RFC 7643 §5): what the portal supports. */
export function serviceProviderConfig(location: string): Record<string, unknown> {
  return {
    ...new SCIMMY.Schemas.ServiceProviderConfig(
      {
        patch: { supported: true },
        bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
        filter: { supported: true, maxResults: SCIM_MAX_PAGE },
        changePassword: { supported: false },
        sort: { supported: false },
        etag: { supported: false },
        authenticationSchemes: [
          {
            type: 'oauthbearertoken',
            name: 'Admin key',
            description: 'An admin key of scope scim, as a Bearer token (vpn-portal admin-key create --scope scim).',
            specUri: 'https://www.rfc-editor.org/rfc/rfc6750',
            primary: true,
          },
        ],
      },
      location,
    ),
  };
}

/** The resource types the portal serves (RFC 7643 §6), below `base` (`…/scim/v2`). */
export function resourceTypes(base: string): Record<string, unknown>[] {
  return [SCIMMY.Resources.User, SCIMMY.Resources.Group].map((resource) => ({
    ...new SCIMMY.Schemas.ResourceType(resource.describe(), `${base}/ResourceTypes`),
  }));
}

/** The schemas of those resource types (RFC 7643 §7). */
export function schemaDefinitions(base: string): Record<string, unknown>[] {
  return [SCIMMY.Schemas.User, SCIMMY.Schemas.Group, SCIMMY.Schemas.EnterpriseUser].map(
    (schema) => schema.definition.describe(`${base}/Schemas`) as Record<string, unknown>,
  );
}

/**
 * What the portal keeps of a user resource. Its attributes may not grow beyond
 * MAX_USER_ATTRIBUTES_BYTES; a user kept larger before that bound may still be changed (its
 * `active` above all) as long as it does not grow.
 */
function userInputOf(resource: SCIMMY.Schemas.User, current: ScimUserView | null): ScimUserInput {
  const data = { ...(JSON.parse(JSON.stringify(resource)) as Record<string, unknown>) };
  const userName = data['userName'];
  // The userName is the user id on this portal, so it keeps the Admin API's rule of one.
  if (typeof userName !== 'string' || !param.userId.safeParse(userName).success)
    throw new ScimProblem(400, 'invalidValue', 'userName: 1–255 characters, the user id on this portal');
  const externalId = externalIdOf(data, current);
  const active = data['active'];
  const attributes = Object.fromEntries(Object.entries(data).filter(([name]) => !NOT_KEPT.has(name)));
  const bytes = Buffer.byteLength(JSON.stringify(attributes));
  // What is kept already is measured only when the bound is passed: most changes are far below it.
  const keptBytes = () => (current === null ? 0 : Buffer.byteLength(JSON.stringify(current.attributes)));
  if (bytes > MAX_USER_ATTRIBUTES_BYTES && bytes > keptBytes())
    throw new ScimProblem(
      400,
      'invalidValue',
      `the user's attributes take ${bytes.toLocaleString('en')} bytes; the portal keeps at most ${MAX_USER_ATTRIBUTES_BYTES.toLocaleString('en')}`,
    );
  return {
    userName,
    externalId,
    // Only a boolean says something: a missing or null `active` (a PUT without it, a PATCH that
    // removed it) leaves the user as it is, rather than enabling one an administrator disabled.
    active: typeof active === 'boolean' ? active : null,
    attributes,
  };
}

/**
 * 1 to 255 characters, counted as the Admin API counts a user id and as PostgreSQL a column of
 * 255: by code point (`🙂` is one character, two UTF-16 units).
 */
function isOneTo255Characters(text: string): boolean {
  const length = [...text].length;
  return length >= 1 && length <= 255;
}

/** The group scimmy read, with the members read apart; no more than MAX_GROUP_MEMBERS of them. */
function groupInputOf(
  resource: SCIMMY.Schemas.Group,
  memberIds: readonly string[],
  current: ScimGroupView | null,
): ScimGroupInput {
  const data = JSON.parse(JSON.stringify(resource)) as Record<string, unknown>;
  const displayName = data['displayName'];
  if (typeof displayName !== 'string' || !isOneTo255Characters(displayName))
    throw new ScimProblem(400, 'invalidValue', 'displayName: 1–255 characters');
  if (memberIds.length > MAX_GROUP_MEMBERS)
    throw new ScimProblem(
      400,
      'invalidValue',
      `members: a group holds at most ${MAX_GROUP_MEMBERS.toLocaleString('en')} members (this one would hold ${memberIds.length.toLocaleString('en')})`,
    );
  return { displayName, externalId: externalIdOf(data, current), memberIds };
}

/**
 * The resource's externalId when it is a string, of at most MAX_EXTERNAL_ID_CHARACTERS unless it
 * is the one kept already (from before that bound: the resource may still be changed).
 */
function externalIdOf(
  data: Record<string, unknown>,
  current: { readonly externalId: string | null } | null,
): string | null {
  const externalId = data['externalId'];
  if (typeof externalId !== 'string') return null;
  if ([...externalId].length > MAX_EXTERNAL_ID_CHARACTERS && externalId !== current?.externalId)
    throw new ScimProblem(
      400,
      'invalidValue',
      `externalId: at most ${MAX_EXTERNAL_ID_CHARACTERS.toLocaleString('en')} characters`,
    );
  return externalId;
}

/**
 * A PatchOp request with its attribute names as RFC 7644 §3.5.2 spells them: `schemas` and
 * `Operations`, and each operation's `op`, `path` and `value`, sent in any case (names are
 * case-insensitive, RFC 7643 §2.1; scimmy reads only these spellings).
 */
function patchRequest(body: unknown): Record<string, unknown> {
  const request = withNamesAsSpelled(objectBody(body), PATCH_REQUEST_NAMES, 'PatchOp');
  const operations = request['Operations'];
  if (!Array.isArray(operations)) return request;
  return {
    ...request,
    Operations: operations.map((operation: unknown) =>
      isObject(operation) ? withNamesAsSpelled(operation, PATCH_OPERATION_NAMES, 'PatchOp operation') : operation,
    ),
  };
}

const PATCH_REQUEST_NAMES = ['schemas', 'Operations'] as const;
const PATCH_OPERATION_NAMES = ['op', 'path', 'value'] as const;

/** `object` with each key that is one of `names` in another case renamed so; one named twice is a 400. */
function withNamesAsSpelled(
  object: Record<string, unknown>,
  names: readonly string[],
  what: string,
): Record<string, unknown> {
  const spelled = new Map(names.map((name) => [name.toLowerCase(), name] as const));
  const renamed: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) {
    const name = spelled.get(key.toLowerCase()) ?? key;
    if (Object.hasOwn(renamed, name))
      throw new ScimProblem(400, 'invalidSyntax', `${what}: "${name}" is given twice (names are case-insensitive)`);
    // Defined, not assigned: a `__proto__` key (JSON.parse keeps it as a key) stays a key, and
    // never becomes the object's prototype, whose names would then be read as the request's.
    Object.defineProperty(renamed, name, { value, enumerable: true, writable: true, configurable: true });
  }
  return renamed;
}

/**
 * The operations of a PatchOp request: at least one, and at most MAX_PATCH_OPERATIONS (scimmy
 * applies each to the whole resource, and a request's operations run without a pause); each
 * path checked before scimmy parses it.
 */
function operationsOf(request: Record<string, unknown>): unknown[] {
  const operations = request['Operations'];
  if (!Array.isArray(operations) || operations.length === 0)
    throw new ScimProblem(400, 'invalidValue', 'PatchOp: Operations must be a list of at least one operation');
  if (operations.length > MAX_PATCH_OPERATIONS)
    throw new ScimProblem(
      400,
      'tooMany',
      `PatchOp: at most ${MAX_PATCH_OPERATIONS} operations in one request (${operations.length} sent); send them in several`,
    );
  let comparisons = 0;
  for (const path of operations.flatMap(pathsOf)) comparisons += checkedPathComparisons(path);
  if (comparisons > MAX_PATCH_FILTER_COMPARISONS)
    throw new ScimProblem(
      400,
      'tooMany',
      `PatchOp: the filters of this request hold ${comparisons} comparisons, more than ${MAX_PATCH_FILTER_COMPARISONS}; send them in several requests`,
    );
  return operations;
}

/** The paths an operation names: its `path`, or without one the keys of its value (each a path to scimmy). */
function pathsOf(operation: unknown): string[] {
  if (typeof operation !== 'object' || operation === null) return [];
  const { path, value } = operation as { path?: unknown; value?: unknown };
  if (typeof path === 'string') return [path];
  return path === undefined && typeof value === 'object' && value !== null && !Array.isArray(value)
    ? Object.keys(value)
    : [];
}

/** The comparisons of a path scimmy may parse: not too long, its filter of a shape it reads right. */
function checkedPathComparisons(path: string): number {
  if (path.length > MAX_PATCH_PATH_CHARACTERS)
    throw new ScimProblem(
      400,
      'invalidPath',
      `path: at most ${MAX_PATCH_PATH_CHARACTERS.toLocaleString('en')} characters (this one has ${path.length.toLocaleString('en')})`,
    );
  const shape = filterShape(path);
  if (!shape.ok) throw new ScimProblem(400, 'invalidFilter', `path ${path}: ${shape.why}`);
  return shape.comparisons;
}

function patchOfOperations(request: Record<string, unknown>, operations: readonly unknown[]): SCIMMY.Messages.PatchOp {
  return coerced(
    () =>
      new SCIMMY.Messages.PatchOp({
        ...request,
        Operations: operations,
      } as ConstructorParameters<typeof SCIMMY.Messages.PatchOp>[0]),
  );
}

/**
 * One operation with its attribute names as the schema spells them (any case, URN-qualified:
 * scim-paths.ts) and its boolean values as booleans, whether under a path or inside a value object.
 */
function operationOf(operation: unknown, definition: SCIMMY.Types.SchemaDefinition): unknown {
  const canonical = coerced(() => canonicalOperation(operation, definition));
  if (typeof canonical !== 'object' || canonical === null) return canonical;
  const { path, value, ...rest } = canonical as { path?: unknown; value?: unknown };
  const lastName = typeof path === 'string' ? (path.split('.').pop() ?? '').toLowerCase() : null;
  const booleanValue = lastName !== null && BOOLEAN_ATTRIBUTES.has(lastName) ? booleanOf(value) : value;
  return { ...rest, ...(path === undefined ? {} : { path }), value: withBooleans(booleanValue) };
}

async function applied<S extends SCIMMY.Types.Schema>(patch: SCIMMY.Messages.PatchOp, resource: S): Promise<S> {
  try {
    // scimmy answers nothing for a patch that changed nothing (Entra sends `active: "True"` to an active user).
    const result = (await patch.apply(resource, async (instance) => instance)) as S | undefined;
    return result ?? resource;
  } catch (error) {
    throw problemOf(error);
  }
}

/** Runs a scimmy constructor; what it refuses is a 400 with its message. */
function coerced<T>(make: () => T): T {
  try {
    return make();
  } catch (error) {
    throw problemOf(error);
  }
}

function problemOf(error: unknown): ScimProblem {
  if (error instanceof ScimProblem) return error;
  if (error instanceof AttributeGivenTwiceError) return new ScimProblem(400, 'invalidSyntax', error.message);
  if (error instanceof SCIMMY.Types.Error) {
    const known = error as unknown as { status: number; scimType?: string };
    const scimType = (
      ['invalidFilter', 'invalidSyntax', 'invalidValue', 'invalidPath', 'noTarget', 'mutability'] as const
    ).find((type) => type === known.scimType);
    return new ScimProblem(
      known.status >= 400 && known.status < 500 ? known.status : 400,
      scimType ?? null,
      error.message,
    );
  }
  if (error instanceof TypeError || error instanceof SyntaxError)
    return new ScimProblem(400, 'invalidValue', error.message);
  throw error;
}

/** `emails[type eq "work"].value`: a sub-attribute of the entry of one type of a multi-valued attribute. */
const TYPED_ENTRY_PATH = /^(\w+)\[type eq "([^"]*)"\]\.(\w+)$/i;

/**
 * Entra ID sets a typed entry (`emails[type eq "work"].value`) by add or replace also when the
 * user has no entry of that type yet; RFC 7644 would answer noTarget, which would fail the
 * whole request. Such an operation adds the entry instead.
 */
function addingMissingEntry(operation: unknown, attributes: Readonly<Record<string, unknown>>): unknown {
  if (typeof operation !== 'object' || operation === null) return operation;
  const { op, path, value } = operation as { op?: unknown; path?: unknown; value?: unknown };
  if (typeof op !== 'string' || !['add', 'replace'].includes(op.toLowerCase()) || typeof path !== 'string')
    return operation;
  const match = TYPED_ENTRY_PATH.exec(path);
  if (match === null) return operation;
  const [, attribute = '', type = '', subAttribute = ''] = match;
  const entries =
    attributes[Object.keys(attributes).find((name) => name.toLowerCase() === attribute.toLowerCase()) ?? ''];
  const present =
    Array.isArray(entries) &&
    entries.some(
      (entry: unknown) => typeof entry === 'object' && entry !== null && (entry as { type?: unknown }).type === type,
    );
  return present ? operation : { op: 'add', path: attribute, value: [{ type, [subAttribute]: value }] };
}

const ENTERPRISE_MANAGER_PATH = `${SCIM_ENTERPRISE_USER_SCHEMA}:manager`;

/**
 * Entra ID sends the enterprise extension's `manager` as the manager's id alone (`"value":
 * "<id>"`), where RFC 7643 has the complex `{"value": "<id>"}`, which scimmy refuses, and with it
 * the whole PATCH (a deactivation in it too). The id alone is read as `{"value": id}`: by the path
 * of `manager` (as canonicalOperation spells it), of the extension, or in a value without a path.
 */
function withManagerObject(operation: unknown): unknown {
  if (!isObject(operation) || !('value' in operation)) return operation;
  const { path, value } = operation;
  if (path === ENTERPRISE_MANAGER_PATH)
    return typeof value === 'string' ? { ...operation, value: { value } } : operation;
  if (path === SCIM_ENTERPRISE_USER_SCHEMA) return { ...operation, value: managerObjectIn(value) };
  if (path !== undefined || !isObject(value)) return operation;
  return { ...operation, value: withManagerObjects(value) };
}

/**
 * A partial User (a PATCH value without a path, a POST's or PUT's resource; its names as
 * canonicalResource spells them) with a manager given by its id alone made `{"value": id}`, by
 * the qualified name of `manager` or inside the extension's part.
 */
function withManagerObjects(user: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(user).map(([name, inner]) => [
      name,
      name === ENTERPRISE_MANAGER_PATH && typeof inner === 'string'
        ? { value: inner }
        : name === SCIM_ENTERPRISE_USER_SCHEMA
          ? managerObjectIn(inner)
          : inner,
    ]),
  );
}

/** The enterprise extension's part with a `manager` (any case) given as a string made `{"value": …}`. */
function managerObjectIn(extension: unknown): unknown {
  if (!isObject(extension)) return extension;
  return Object.fromEntries(
    Object.entries(extension).map(([name, value]) => [
      name,
      name.toLowerCase() === 'manager' && typeof value === 'string' ? { value } : value,
    ]),
  );
}

/** "True", "false" (any case) as booleans; anything else as it is. */
function booleanOf(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const lower = value.toLowerCase();
  return lower === 'true' ? true : lower === 'false' ? false : value;
}

/** The value with every boolean attribute (`active`, `primary`) given as a string made a boolean, at any depth. */
function withBooleans(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withBooleans);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, inner]) => [
      name,
      BOOLEAN_ATTRIBUTES.has(name.toLowerCase()) ? booleanOf(inner) : withBooleans(inner),
    ]),
  );
}

function objectBody(body: unknown): Record<string, unknown> {
  if (!isObject(body)) throw new ScimProblem(400, 'invalidSyntax', 'the request body must be a JSON object');
  return body;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Why a query parameter is no one text: given more than once, or percent-encoded bytes that are no UTF-8. */
function notOneText(value: unknown): string {
  return Array.isArray(value) ? 'give it once' : 'not UTF-8 text';
}

/**
 * A startIndex or count the portal reads at most: past any list it holds, and an offset every
 * database takes (a number of 20 digits is no integer to PostgreSQL's OFFSET).
 */
const MAX_LIST_NUMBER = 999_999_999;

function positiveInteger(value: unknown, name: string, fallback: number, least = 1): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !/^-?\d+$/.test(value))
    throw new ScimProblem(400, 'invalidValue', `${name}: a whole number`);
  // RFC 7644 §3.4.2.4: a startIndex below 1 is read as 1, a negative count as 0; a larger one
  // than the portal reads is still a whole number (count=2147483647 asks for everything, and
  // gets a full page), not a 400 that fails the client's whole sync.
  return Math.min(Math.max(Number(value), least), MAX_LIST_NUMBER);
}
