// Queries on `scim_groups` and `scim_group_members` (migration 0027): the directory's groups,
// named by their displayName (what `scim.groupProfiles` maps to profiles), and their members,
// each a SCIM user.
import type { UserId } from '../shared/ids.js';
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import { isPostgres, type Db } from './database.js';
import { lockForTransaction } from './exclusive.js';
import { scimNameKey } from './scim-name-key.js';
import { SCIM_IDS_PER_STATEMENT } from './scim-users.js';

export interface StoredScimGroup {
  readonly scimId: string;
  readonly displayName: string;
  readonly externalId: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** A member as a group lists it: the SCIM user's id and its portal user id (SCIM's `display`). */
export interface ScimGroupMember {
  readonly scimId: string;
  readonly userId: UserId;
}

export async function insertScimGroup(db: Db, group: StoredScimGroup): Promise<void> {
  await db
    .insertInto('scim_groups')
    .values({
      scim_id: group.scimId,
      display_name: group.displayName,
      display_name_key: scimNameKey(group.displayName),
      external_id: group.externalId,
      created_at: group.createdAt,
      updated_at: group.updatedAt,
    })
    .execute();
}

export async function updateScimGroup(
  db: Db,
  scimId: string,
  change: Pick<StoredScimGroup, 'displayName' | 'externalId' | 'updatedAt'>,
): Promise<void> {
  await db
    .updateTable('scim_groups')
    .set({
      display_name: change.displayName,
      display_name_key: scimNameKey(change.displayName),
      external_id: change.externalId,
      updated_at: change.updatedAt,
    })
    .where('scim_id', '=', scimId)
    .execute();
}

/** Deletes the group; its memberships go with it. */
export async function deleteScimGroup(db: Db, scimId: string): Promise<void> {
  await db.deleteFrom('scim_group_members').where('group_id', '=', scimId).execute();
  await db.deleteFrom('scim_groups').where('scim_id', '=', scimId).execute();
}

export async function findScimGroup(db: Db, scimId: string): Promise<StoredScimGroup | undefined> {
  const row = await db.selectFrom('scim_groups').selectAll().where('scim_id', '=', scimId).executeTakeFirst();
  return row === undefined ? undefined : toGroup(row);
}

/**
 * In a change's transaction: the group, its row locked until the transaction ends on
 * PostgreSQL, so a second change of it waits for this one and then reads what it left (SQLite
 * runs one writing transaction at a time: nothing to lock there).
 */
export async function lockScimGroup(trx: Db, scimId: string): Promise<StoredScimGroup | undefined> {
  let query = trx.selectFrom('scim_groups').selectAll().where('scim_id', '=', scimId);
  if (isPostgres(trx)) query = query.forUpdate();
  const row = await query.executeTakeFirst();
  return row === undefined ? undefined : toGroup(row);
}

export async function findScimGroupNamed(db: Db, displayName: string): Promise<StoredScimGroup | undefined> {
  const row = await db.selectFrom('scim_groups').selectAll().where('display_name', '=', displayName).executeTakeFirst();
  return row === undefined ? undefined : toGroup(row);
}

/**
 * The group named `displayName` letter case aside (by the key of scimNameKey), the first in
 * displayName order if groups made before the portal refused case twins share that key.
 */
export async function findScimGroupNamedAnyCase(db: Db, displayName: string): Promise<StoredScimGroup | undefined> {
  const row = await scimGroupsNamedQuery(db, displayName)
    .selectAll()
    .orderBy('display_name')
    .limit(1)
    .executeTakeFirst();
  return row === undefined ? undefined : toGroup(row);
}

/**
 * Holds, until the transaction ends, every change that names a group `displayName` letter case
 * aside (PostgreSQL; SQLite's write transactions run one at a time anyway): the unique index
 * compares names exactly, and the key of the names is not unique (groups made before may share
 * one), so two POSTs of `Staff` and `staff` that each found no group of that key would otherwise
 * both write theirs. Taken before that look-up.
 */
export async function lockScimGroupName(trx: Db, displayName: string): Promise<void> {
  await lockForTransaction(trx, `scim-group-name:${scimNameKey(displayName)}`);
}

/**
 * Which groups a list holds: all of them, those whose displayName is `displayName` without regard
 * to case (RFC 7643: a Group's displayName is not case-exact), those `memberId` is a member of
 * (which groups a user is in), or the group `scimId` if `memberId` is one of its members (a
 * directory's membership check).
 */
export type ScimGroupsSelection =
  | { readonly displayName: string }
  | { readonly memberId: string }
  | { readonly scimId: string; readonly memberId: string }
  | null;

/** A page of the groups `selection` holds (`offset` from 0) in displayName order; and how many in all. */
export async function scimGroupsPage(
  db: Db,
  selection: ScimGroupsSelection,
  offset: number,
  limit: number,
): Promise<{ readonly groups: readonly StoredScimGroup[]; readonly total: number }> {
  if (selection !== null && 'scimId' in selection) {
    const group = await scimGroupWithMember(db, selection.scimId, selection.memberId);
    return {
      groups: group === undefined || offset > 0 || limit === 0 ? [] : [group],
      total: group === undefined ? 0 : 1,
    };
  }
  if (selection !== null && 'memberId' in selection)
    return filteredPage(scimGroupsOfMemberQuery(db, selection.memberId), offset, limit);
  if (selection !== null) return filteredPage(scimGroupsNamedQuery(db, selection.displayName), offset, limit);
  const query = db.selectFrom('scim_groups');
  const counted = await query.select((eb) => eb.fn.countAll<number | string>().as('total')).executeTakeFirstOrThrow();
  const rows = limit === 0 ? [] : await query.selectAll().orderBy('display_name').limit(limit).offset(offset).execute();
  return { groups: rows.map(toGroup), total: Number(counted.total) };
}

/** The group, if `memberId` is one of its members. */
async function scimGroupWithMember(db: Db, scimId: string, memberId: string): Promise<StoredScimGroup | undefined> {
  const row = await db
    .selectFrom('scim_groups')
    .innerJoin('scim_group_members', 'scim_group_members.group_id', 'scim_groups.scim_id')
    .selectAll('scim_groups')
    .where('scim_groups.scim_id', '=', scimId)
    .where('scim_group_members.member_id', '=', memberId)
    .executeTakeFirst();
  return row === undefined ? undefined : toGroup(row);
}

/** The groups named `displayName` in any case, by the key kept beside each (migration 0062), in its index. */
export function scimGroupsNamedQuery(db: Db, displayName: string) {
  return db.selectFrom('scim_groups').where('display_name_key', '=', scimNameKey(displayName));
}

/**
 * The groups `memberId` is a member of, by the index of the members' ids (migration 0027), each
 * group then by its key: a user's few groups, whatever the number of groups and members.
 */
export function scimGroupsOfMemberQuery(db: Db, memberId: string) {
  return db
    .selectFrom('scim_groups')
    .where((eb) =>
      eb(
        'scim_id',
        'in',
        eb.selectFrom('scim_group_members').select('scim_group_members.group_id').where('member_id', '=', memberId),
      ),
    );
}

/** A page of the groups a query of `scim_groups` holds, in displayName order, and how many in all. */
async function filteredPage(
  query: ReturnType<typeof scimGroupsNamedQuery>,
  offset: number,
  limit: number,
): Promise<{ readonly groups: readonly StoredScimGroup[]; readonly total: number }> {
  const counted = await query.select((eb) => eb.fn.countAll<number | string>().as('total')).executeTakeFirstOrThrow();
  const rows = limit === 0 ? [] : await query.selectAll().orderBy('display_name').limit(limit).offset(offset).execute();
  return { groups: rows.map(toGroup), total: Number(counted.total) };
}

/** The members of a group, in user id order. */
export async function membersOfScimGroup(db: Db, groupId: string): Promise<ScimGroupMember[]> {
  const rows = await db
    .selectFrom('scim_group_members')
    .innerJoin('scim_users', 'scim_users.scim_id', 'scim_group_members.member_id')
    .select(['scim_users.scim_id', 'scim_users.user_id'])
    .where('scim_group_members.group_id', '=', groupId)
    .orderBy('scim_users.user_id')
    .execute();
  return rows.map((row) => ({ scimId: row.scim_id, userId: row.user_id as UserId }));
}

/**
 * The members of a group as a Group resource shows them (`value`: the SCIM id, `display`: the
 * user id), in user id order; the rows themselves, so 100,000 members are one array of them.
 */
export async function memberViewsOfScimGroup(
  db: Db,
  groupId: string,
): Promise<{ readonly value: string; readonly display: string }[]> {
  return db
    .selectFrom('scim_group_members')
    .innerJoin('scim_users', 'scim_users.scim_id', 'scim_group_members.member_id')
    .select(['scim_users.scim_id as value', 'scim_users.user_id as display'])
    .where('scim_group_members.group_id', '=', groupId)
    .orderBy('scim_users.user_id')
    .execute();
}

/** How many members each of `groupIds` has (a group without any is not in the map). */
export async function memberCountsOfScimGroups(db: Db, groupIds: readonly string[]): Promise<Map<string, number>> {
  if (groupIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('scim_group_members')
    .select(['group_id', (eb) => eb.fn.countAll<number | string>().as('members')])
    .where('group_id', 'in', groupIds)
    .groupBy('group_id')
    .execute();
  return new Map(rows.map((row) => [row.group_id, Number(row.members)]));
}

/**
 * Makes `memberIds` (SCIM user ids) the group's members, exactly: those it lost are deleted and
 * those it gained inserted, SCIM_IDS_PER_STATEMENT at a time, so a PATCH that adds one member to
 * a group of 50,000 writes one row.
 */
export async function setScimGroupMembers(db: Db, groupId: string, memberIds: readonly string[]): Promise<void> {
  const wanted = new Set(memberIds);
  if (wanted.size === 0) {
    await db.deleteFrom('scim_group_members').where('group_id', '=', groupId).execute();
    return;
  }
  const stored = new Set(
    (await db.selectFrom('scim_group_members').select('member_id').where('group_id', '=', groupId).execute()).map(
      (row) => row.member_id,
    ),
  );
  const gone = [...stored].filter((memberId) => !wanted.has(memberId));
  const added = [...wanted].filter((memberId) => !stored.has(memberId));
  for (const ids of sizeLimitedGroups(gone, () => 1, SCIM_IDS_PER_STATEMENT))
    await db.deleteFrom('scim_group_members').where('group_id', '=', groupId).where('member_id', 'in', ids).execute();
  for (const ids of sizeLimitedGroups(added, () => 1, SCIM_IDS_PER_STATEMENT))
    await db
      .insertInto('scim_group_members')
      .values(ids.map((memberId) => ({ group_id: groupId, member_id: memberId })))
      .execute();
}

/** The displayNames of the groups a SCIM user is in. */
export async function groupNamesOfScimUser(db: Db, memberId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('scim_group_members')
    .innerJoin('scim_groups', 'scim_groups.scim_id', 'scim_group_members.group_id')
    .select('scim_groups.display_name')
    .where('scim_group_members.member_id', '=', memberId)
    .execute();
  return rows.map((row) => row.display_name);
}

/** Removes a SCIM user from every group. */
export async function removeScimUserFromGroups(db: Db, memberId: string): Promise<void> {
  await db.deleteFrom('scim_group_members').where('member_id', '=', memberId).execute();
}

function toGroup(row: {
  scim_id: string;
  display_name: string;
  external_id: string | null;
  created_at: string;
  updated_at: string;
}): StoredScimGroup {
  return {
    scimId: row.scim_id,
    displayName: row.display_name,
    externalId: row.external_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
