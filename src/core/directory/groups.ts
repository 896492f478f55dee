// SCIM Groups: the directory's groups and their members (SCIM users). A group grants nothing by
// itself; `scim.groupProfiles` says which profiles its members may hold, and after a change that
// took members out (or renamed or deleted the group) the members it touched lose what no group
// of theirs grants any more (group-profiles.ts: noted in the change's transaction, so a check
// that does not run after it is run by the reconcile pass).
import { randomUUID } from 'node:crypto';
import { ScimProblem, type ScimGroupInput, type ScimGroupView } from '../../protocol/scim.js';
import type { RevocationId } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import type { Db } from '../../storage/database.js';
import { isUniqueViolation } from '../../storage/errors.js';
import {
  deleteScimGroup,
  findScimGroup,
  findScimGroupNamed,
  insertScimGroup,
  membersOfScimGroup,
  scimGroupsPage,
  setScimGroupMembers,
  updateScimGroup,
  type StoredScimGroup,
} from '../../storage/scim-groups.js';
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

export async function directoryGroup(ctx: PortalContext, scimId: string): Promise<ScimGroupView> {
  return viewOf(ctx.db, await existingGroup(ctx, scimId));
}

/** A page of groups (`startIndex` from 1), all or the one named `displayName`. */
export async function directoryGroups(
  ctx: PortalContext,
  displayName: string | null,
  startIndex: number,
  count: number,
): Promise<{ readonly groups: ScimGroupView[]; readonly total: number }> {
  const page = await scimGroupsPage(ctx.db, displayName ?? undefined, startIndex - 1, count);
  const groups: ScimGroupView[] = [];
  for (const group of page.groups) groups.push(await viewOf(ctx.db, group));
  return { groups, total: page.total };
}

export async function createDirectoryGroup(ctx: PortalContext, input: ScimGroupInput): Promise<ScimGroupView> {
  const at = ctx.clock.now();
  const scimId = randomUUID();
  await guardedByName(input.displayName, () =>
    ctx.events.change(ctx.db, async (trx, announce) => {
      if ((await findScimGroupNamed(trx, input.displayName)) !== undefined) throw taken(input.displayName);
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
  return viewOf(ctx.db, await existingGroup(ctx, scimId));
}

/** PUT (and PATCH, once applied): the group's new name and members. */
export async function replaceDirectoryGroup(
  ctx: PortalContext,
  scimId: string,
  input: ScimGroupInput,
): Promise<DirectoryGroupChange> {
  const at = ctx.clock.now();
  const touched = await guardedByName(input.displayName, () =>
    ctx.events.change(ctx.db, async (trx, announce) => {
      const current = await existingGroup({ db: trx }, scimId);
      const named = await findScimGroupNamed(trx, input.displayName);
      if (named !== undefined && named.scimId !== scimId) throw taken(input.displayName);
      const before = await membersOfScimGroup(trx, scimId);
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
      const members = before.filter((member) => current.displayName !== input.displayName || !kept.has(member.scimId));
      const check = await noteGroupProfileChecks(ctx, trx, members);
      await announce({ type: 'scim.changed', at, resource: 'Group', action: 'replaced', scimId });
      return { userIds: members.map((member) => member.userId), check };
    }),
  );
  const revocationIds = await applyGroupProfiles(ctx, touched.userIds, touched.check);
  return { group: await viewOf(ctx.db, await existingGroup(ctx, scimId)), revocationIds };
}

/** Deletes the group; its members lose what no other group of theirs grants. */
export async function deleteDirectoryGroup(ctx: PortalContext, scimId: string): Promise<RevocationId[]> {
  const at = ctx.clock.now();
  const touched = await ctx.events.change(ctx.db, async (trx, announce) => {
    await existingGroup({ db: trx }, scimId);
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

/** Two requests naming one group at once: the unique index decides. */
async function guardedByName<T>(displayName: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isUniqueViolation(error)) throw taken(displayName);
    throw error;
  }
}

function taken(displayName: string): ScimProblem {
  return new ScimProblem(409, 'uniqueness', `a Group with displayName "${displayName}" exists already`);
}

async function viewOf(db: Db, group: StoredScimGroup): Promise<ScimGroupView> {
  const members = await membersOfScimGroup(db, group.scimId);
  return {
    id: group.scimId,
    displayName: group.displayName,
    externalId: group.externalId,
    members: members.map((member) => ({ value: member.scimId, display: member.userId })),
    created: group.createdAt,
    lastModified: group.updatedAt,
  };
}
