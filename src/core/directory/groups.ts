// SCIM Groups: the directory's groups and their members (SCIM users). A group grants nothing by
// itself; `scim.groupProfiles` says which profiles its members may hold, and after a change that
// took members out (or renamed or deleted the group) the members it touched lose what no group
// of theirs grants any more (group-profiles.ts: noted in the change's transaction, so a check
// that does not run after it is run by the reconcile pass). A displayName is one group's letter
// case aside, as a directory's filter finds it: a POST, or a rename, to another group's name in
// another case is refused (409), as an exact one is.
import { randomUUID } from 'node:crypto';
import { MAX_LISTED_MEMBERS, ScimProblem, type ScimGroupInput, type ScimGroupView } from '../../protocol/scim.js';
import type { RevocationId } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import type { Db } from '../../storage/database.js';
import { isUniqueViolation } from '../../storage/errors.js';
import {
  deleteScimGroup,
  findScimGroup,
  findScimGroupNamed,
  findScimGroupNamedAnyCase,
  insertScimGroup,
  lockScimGroup,
  lockScimGroupName,
  memberCountsOfScimGroups,
  membersOfScimGroup,
  memberViewsOfScimGroup,
  scimGroupsPage,
  setScimGroupMembers,
  updateScimGroup,
  type ScimGroupsSelection,
  type StoredScimGroup,
} from '../../storage/scim-groups.js';
import { scimNameKey } from '../../storage/scim-name-key.js';
import { knownScimUserIds } from '../../storage/scim-users.js';
import type { PortalContext } from '../context.js';
import { applyGroupProfiles, noteGroupProfileChecks } from './group-profiles.js';

/** Unknown members an answer names at most. */
const NAMED_UNKNOWN_MEMBERS = 10;

/** A group after a change, and the receipts of the configurations its members lost. */
export interface DirectoryGroupChange {
  readonly group: ScimGroupView;
  readonly revocationIds: readonly RevocationId[];
}

/** What an answer about groups holds: `members: false` leaves them out (`excludedAttributes=members`). */
export interface GroupReading {
  readonly members: boolean;
}

const WITH_MEMBERS: GroupReading = { members: true };

export async function directoryGroup(
  ctx: PortalContext,
  scimId: string,
  reading: GroupReading = WITH_MEMBERS,
): Promise<ScimGroupView> {
  return viewOf(ctx.db, await existingGroup(ctx, scimId), reading);
}

/**
 * A page of groups (`startIndex` from 1), those `selection` holds (all, those of one displayName in
 * any case, those a user is a member of, or one group if it has that member); with their members
 * while the page's stay within MAX_LISTED_MEMBERS, a group past that without them.
 */
export async function directoryGroups(
  ctx: PortalContext,
  selection: ScimGroupsSelection,
  startIndex: number,
  count: number,
  reading: GroupReading = WITH_MEMBERS,
): Promise<{ readonly groups: ScimGroupView[]; readonly total: number }> {
  const page = await scimGroupsPage(ctx.db, selection, startIndex - 1, count);
  const counts = reading.members
    ? await memberCountsOfScimGroups(
        ctx.db,
        page.groups.map((group) => group.scimId),
      )
    : new Map<string, number>();
  let budget = MAX_LISTED_MEMBERS;
  const groups: ScimGroupView[] = [];
  for (const group of page.groups) {
    const members = counts.get(group.scimId) ?? 0;
    const fits = reading.members && members <= budget;
    if (fits) budget -= members;
    groups.push(await viewOf(ctx.db, group, { members: fits }));
  }
  return { groups, total: page.total };
}

export async function createDirectoryGroup(ctx: PortalContext, input: ScimGroupInput): Promise<ScimGroupView> {
  const at = ctx.clock.now();
  const scimId = randomUUID();
  await guardedByName(
    () => input.displayName,
    () =>
      ctx.events.change(ctx.db, async (trx, announce) => {
        await refuseTakenName(trx, input.displayName);
        await assertMembersKnown(trx, input.memberIds);
        await insertScimGroup(trx, {
          scimId,
          displayName: input.displayName,
          externalId: input.externalId,
          createdAt: formatAtom(at),
          updatedAt: formatAtom(at),
        });
        await setScimGroupMembers(trx, scimId, input.memberIds);
        await announce({ type: 'scim.changed', at, resource: 'Group', action: 'created', scimId });
      }),
  );
  return viewOf(ctx.db, await existingGroup(ctx, scimId), WITH_MEMBERS);
}

/** PUT: the group's new name and members. */
export function replaceDirectoryGroup(
  ctx: PortalContext,
  scimId: string,
  input: ScimGroupInput,
): Promise<DirectoryGroupChange> {
  return changeDirectoryGroup(ctx, scimId, async () => input);
}

/**
 * PATCH: `change` is applied, in the transaction, to the group as stored, its row locked
 * first: two PATCHes at once each apply to what the other left (one that removes a member and
 * one that adds another both hold, never the second putting back the member the first took out).
 */
export function patchDirectoryGroup(
  ctx: PortalContext,
  scimId: string,
  change: (current: ScimGroupView) => Promise<ScimGroupInput>,
): Promise<DirectoryGroupChange> {
  return changeDirectoryGroup(ctx, scimId, change);
}

async function changeDirectoryGroup(
  ctx: PortalContext,
  scimId: string,
  inputOf: (current: ScimGroupView) => Promise<ScimGroupInput>,
): Promise<DirectoryGroupChange> {
  const at = ctx.clock.now();
  let displayName = '';
  const touched = await guardedByName(
    () => displayName,
    () =>
      ctx.events.change(ctx.db, async (trx, announce) => {
        const current = await lockScimGroup(trx, scimId);
        if (current === undefined) throw new ScimProblem(404, null, `no Group with id "${scimId}"`);
        const before = await membersOfScimGroup(trx, scimId);
        const input = await inputOf({
          ...viewWithout(current),
          members: before.map((member) => ({ value: member.scimId, display: member.userId })),
        });
        displayName = input.displayName;
        // Renamed to another name, not its own in another case: no other group may hold it in any case.
        if (scimNameKey(input.displayName) !== scimNameKey(current.displayName))
          await refuseTakenName(trx, input.displayName);
        // Its own name in another case: only the exact name of a case twin made before is taken.
        const named = await findScimGroupNamed(trx, input.displayName);
        if (named !== undefined && named.scimId !== scimId) throw taken(input.displayName);
        // Its members now are SCIM users (a foreign key): only those it gains are looked up.
        const held = new Set(before.map((member) => member.scimId));
        await assertMembersKnown(
          trx,
          input.memberIds.filter((memberId) => !held.has(memberId)),
        );
        await updateScimGroup(trx, scimId, {
          displayName: input.displayName,
          externalId: input.externalId,
          updatedAt: formatAtom(at),
        });
        await setScimGroupMembers(trx, scimId, input.memberIds);
        // A renamed group may grant other profiles: then every member is touched, else those who left.
        const kept = new Set(input.memberIds);
        const members = before.filter(
          (member) => current.displayName !== input.displayName || !kept.has(member.scimId),
        );
        const check = await noteGroupProfileChecks(ctx, trx, members);
        await announce({ type: 'scim.changed', at, resource: 'Group', action: 'replaced', scimId });
        return { userIds: members.map((member) => member.userId), check };
      }),
  );
  const revocationIds = await applyGroupProfiles(ctx, touched.userIds, touched.check);
  return { group: await viewOf(ctx.db, await existingGroup(ctx, scimId), WITH_MEMBERS), revocationIds };
}

/** Deletes the group; its members lose what no other group of theirs grants. */
export async function deleteDirectoryGroup(ctx: PortalContext, scimId: string): Promise<RevocationId[]> {
  const at = ctx.clock.now();
  const touched = await ctx.events.change(ctx.db, async (trx, announce) => {
    if ((await lockScimGroup(trx, scimId)) === undefined)
      throw new ScimProblem(404, null, `no Group with id "${scimId}"`);
    const before = await membersOfScimGroup(trx, scimId);
    const check = await noteGroupProfileChecks(ctx, trx, before);
    await deleteScimGroup(trx, scimId);
    await announce({ type: 'scim.changed', at, resource: 'Group', action: 'deleted', scimId });
    return { userIds: before.map((member) => member.userId), check };
  });
  return applyGroupProfiles(ctx, touched.userIds, touched.check);
}

async function existingGroup(ctx: { readonly db: Db }, scimId: string): Promise<StoredScimGroup> {
  const group = await findScimGroup(ctx.db, scimId);
  if (group === undefined) throw new ScimProblem(404, null, `no Group with id "${scimId}"`);
  return group;
}

async function assertMembersKnown(db: Db, memberIds: readonly string[]): Promise<void> {
  const known = await knownScimUserIds(db, memberIds);
  const unknown = memberIds.filter((memberId) => !known.has(memberId));
  if (unknown.length === 0) return;
  // A few named are enough to find the mistake; a group of thousands of them would make a huge answer.
  const named = unknown.slice(0, NAMED_UNKNOWN_MEMBERS).map((id) => `"${id}"`);
  const more = unknown.length > named.length ? ` and ${unknown.length - named.length} more` : '';
  throw new ScimProblem(400, 'invalidValue', `members: no User with id ${named.join(', ')}${more}`);
}

/** Two requests naming one group exactly at once: the unique index decides. */
async function guardedByName<T>(displayName: () => string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isUniqueViolation(error)) throw taken(displayName());
    throw error;
  }
}

/**
 * A group of that displayName letter case aside exists already (RFC 7643: a Group's displayName
 * is not case-exact, and a directory's filter finds it so): the name is that group's, not a
 * second group's. The name's lock is held first, so two requests at once of one name in two
 * cases take turns here, and the later one finds the group the first made.
 */
async function refuseTakenName(trx: Db, displayName: string): Promise<void> {
  await lockScimGroupName(trx, displayName);
  const existing = await findScimGroupNamedAnyCase(trx, displayName);
  if (existing === undefined) return;
  if (existing.displayName === displayName) throw taken(displayName);
  // Of case twins made before, the one named exactly so is the one to name back.
  const exact = await findScimGroupNamed(trx, displayName);
  throw taken(exact?.displayName ?? existing.displayName, displayName);
}

/** 409 uniqueness naming the group that holds the name as it has it; `asked`, if another case, besides. */
function taken(existing: string, asked: string = existing): ScimProblem {
  const other = asked === existing ? '' : ` ("${asked}" differs from it only in letter case)`;
  return new ScimProblem(409, 'uniqueness', `a Group with displayName "${existing}" exists already${other}`);
}

async function viewOf(db: Db, group: StoredScimGroup, reading: GroupReading): Promise<ScimGroupView> {
  return {
    ...viewWithout(group),
    members: reading.members ? await memberViewsOfScimGroup(db, group.scimId) : null,
  };
}

function viewWithout(group: StoredScimGroup): ScimGroupView {
  return {
    id: group.scimId,
    displayName: group.displayName,
    externalId: group.externalId,
    members: null,
    created: group.createdAt,
    lastModified: group.updatedAt,
  };
}
