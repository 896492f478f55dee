// SCIM Users as portal users: `userName` is the portal's user id. Creating one makes the user as
// create would (or links the user already here), `active: false` disables it and `active: true`
// enables it again if the directory disabled it (disable_user and enable_user, with their
// receipts), deleting it destroys the user.
// What else the directory sent (name, emails, …) is kept to be read back, and changes nothing.
import { randomUUID } from 'node:crypto';
import { ScimProblem, type ScimUserInput, type ScimUserView } from '../../protocol/scim.js';
import { asUserId, type RevocationId, type UserId } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import { isUniqueViolation } from '../../storage/errors.js';
import {
  findScimUser,
  findScimUserOfUser,
  insertScimUser,
  scimUsersPage,
  updateScimUser,
  type ScimUserWithState,
} from '../../storage/scim-users.js';
import { ensureUser, takeOverImportDisable } from '../../storage/users.js';
import type { PortalContext } from '../context.js';
import { destroyUser, disableUser, enableUser } from '../users/index.js';

/** A SCIM user after a change, and the receipts of what the change took from the nodes. */
export interface DirectoryUserChange {
  readonly user: ScimUserView;
  readonly revocationIds: readonly RevocationId[];
}

export async function directoryUser(ctx: PortalContext, scimId: string): Promise<ScimUserView> {
  return viewOf(await existingScimUser(ctx, scimId));
}

/** A page of SCIM users (`startIndex` from 1), all or those whose userName or externalId is `value`. */
export async function directoryUsers(
  ctx: PortalContext,
  filter: { readonly attribute: 'userName' | 'externalId'; readonly value: string } | null,
  startIndex: number,
  count: number,
): Promise<{ readonly users: ScimUserView[]; readonly total: number }> {
  const match =
    filter === null
      ? {}
      : filter.attribute === 'userName'
        ? { userId: asUserId(filter.value) }
        : { externalId: filter.value };
  const page = await scimUsersPage(ctx.db, match, startIndex - 1, count);
  return { users: page.users.map(viewOf), total: page.total };
}

/** Provisions a user: the portal user is made, or the one already here is linked. */
export async function createDirectoryUser(ctx: PortalContext, input: ScimUserInput): Promise<DirectoryUserChange> {
  const userId = asUserId(input.userName);
  const at = ctx.clock.now();
  const scimId = randomUUID();
  try {
    await ctx.events.change(ctx.db, async (trx, announce) => {
      if ((await findScimUserOfUser(trx, userId)) !== undefined) throw taken(userId);
      const user = await ensureUser(trx, userId, formatAtom(at));
      await insertScimUser(trx, {
        scimId,
        userId,
        externalId: input.externalId,
        attributes: input.attributes,
        createdAt: formatAtom(at),
        updatedAt: formatAtom(at),
      });
      if (user.created) await announce({ type: 'user.created', at, userId });
      await announce({ type: 'scim.changed', at, resource: 'User', action: 'created', scimId, userId });
    });
  } catch (error) {
    // Two requests for one user at once: the unique index decides.
    if (isUniqueViolation(error)) throw taken(userId);
    throw error;
  }
  const revocationIds = await followActive(ctx, await existingScimUser(ctx, scimId), input.active);
  return { user: viewOf(await existingScimUser(ctx, scimId)), revocationIds };
}

/** PUT (and PATCH, once applied): the directory's new view of the user. */
export async function replaceDirectoryUser(
  ctx: PortalContext,
  scimId: string,
  input: ScimUserInput,
): Promise<DirectoryUserChange> {
  const current = await existingScimUser(ctx, scimId);
  if (input.userName !== current.userId)
    throw new ScimProblem(
      400,
      'mutability',
      `userName is the user id on this portal ("${current.userId}") and cannot change; delete the user and create it again`,
    );
  const at = ctx.clock.now();
  await ctx.events.change(ctx.db, async (trx, announce) => {
    await updateScimUser(trx, scimId, {
      externalId: input.externalId,
      attributes: input.attributes,
      updatedAt: formatAtom(at),
    });
    await announce({ type: 'scim.changed', at, resource: 'User', action: 'replaced', scimId, userId: current.userId });
  });
  const revocationIds = await followActive(ctx, current, input.active);
  return { user: viewOf(await existingScimUser(ctx, scimId)), revocationIds };
}

/** Deprovisions a user: destroyed, as by destroy (its SCIM user and memberships go with it). */
export async function deleteDirectoryUser(ctx: PortalContext, scimId: string): Promise<RevocationId> {
  const current = await existingScimUser(ctx, scimId);
  return destroyUser(ctx, current.userId);
}

/** Who the portal records as having disabled a user the directory called inactive. */
export const DIRECTORY_DISABLER = '(directory)';

/**
 * Disables or enables the user when the directory says otherwise than the portal. It enables
 * only a user it disabled itself: one an administrator disabled (during an incident, while the
 * directory still calls the person active) stays disabled until an administrator enables it.
 * One only the eduVPN import disabled, the directory calling it inactive, it takes over.
 */
async function followActive(
  ctx: PortalContext,
  user: ScimUserWithState,
  active: boolean | null,
): Promise<RevocationId[]> {
  if (active === false && !user.isDisabled) return [await disableUser(ctx, user.userId, { by: DIRECTORY_DISABLER })];
  // Disabled only by the eduVPN import (as eduVPN had it): the directory's disable now, which the
  // import leaves alone, so that it brings the user nothing eduVPN issued it.
  if (active === false && (await takeOverImportDisable(ctx.db, user.userId, DIRECTORY_DISABLER)))
    ctx.logger.info(
      { userId: user.userId },
      'the directory calls the user inactive: its disable is the directory’s now',
    );
  if (active === true && user.isDisabled) {
    const enabled = await enableUser(ctx, user.userId, { onlyIfDisabledBy: DIRECTORY_DISABLER });
    if (!enabled)
      ctx.logger.info(
        { userId: user.userId },
        'the directory calls the user active, but it was not the directory that disabled it: it stays disabled',
      );
  }
  return [];
}

async function existingScimUser(ctx: PortalContext, scimId: string): Promise<ScimUserWithState> {
  const user = await findScimUser(ctx.db, scimId);
  if (user === undefined) throw new ScimProblem(404, null, `no User with id "${scimId}"`);
  return user;
}

function taken(userId: UserId): ScimProblem {
  return new ScimProblem(409, 'uniqueness', `a User with userName "${userId}" exists already`);
}

function viewOf(user: ScimUserWithState): ScimUserView {
  return {
    id: user.scimId,
    userName: user.userId,
    externalId: user.externalId,
    active: !user.isDisabled,
    attributes: user.attributes,
    created: user.createdAt,
    lastModified: user.updatedAt,
  };
}
