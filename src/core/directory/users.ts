// SCIM Users as portal users: `userName` is the portal's user id. Creating one makes the user as
// create would (or links the user already here), `active: false` disables it and `active: true`
// enables it again if the directory disabled it (disable_user and enable_user, with their
// receipts), deleting it destroys the user.
// What else the directory sent (name, emails, …) is kept to be read back, and changes nothing.
import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import { ScimProblem, type ScimUserInput, type ScimUserView } from '../../protocol/scim.js';
import { asUserId, type RevocationId, type UserId } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import { isUniqueViolation } from '../../storage/errors.js';
import {
  findScimUser,
  findScimUserNamed,
  insertScimUser,
  lockScimUser,
  noteDirectoryActive,
  scimUsersPage,
  updateScimUser,
  type ScimUserWithState,
  type ScimUsersMatch,
} from '../../storage/scim-users.js';
import { scimNameKey } from '../../storage/scim-name-key.js';
import type { Database } from '../../storage/schema.js';
import type { WireGuardPeer } from '../../storage/wg-peers.js';
import { ensureUser, lockUser, takeOverImportDisable } from '../../storage/users.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import type { Announce } from '../events.js';
import { newRevocationId } from '../revocations/index.js';
import { readTimeNow } from '../nodes/index.js';
import {
  destroyUser,
  disableExistingUserIfEnabled,
  enableUserInTransaction,
  pushPeersOfEnabledUser,
  endAccessOfDisabledUser,
  revokeAccessOfDisabledUser,
  type EndedAccess,
} from '../users/index.js';

/** A SCIM user after a change, and the receipts of what the change took from the nodes. */
export interface DirectoryUserChange {
  readonly user: ScimUserView;
  readonly revocationIds: readonly RevocationId[];
}

export async function directoryUser(ctx: PortalContext, scimId: string): Promise<ScimUserView> {
  return viewOf(await existingScimUser(ctx, scimId));
}

/** A page of SCIM users (`startIndex` from 1), all or those whose userName (in any case) or externalId is `value`. */
export async function directoryUsers(
  ctx: PortalContext,
  filter: { readonly attribute: 'userName' | 'externalId'; readonly value: string } | null,
  startIndex: number,
  count: number,
): Promise<{ readonly users: ScimUserView[]; readonly total: number }> {
  const match: ScimUsersMatch =
    filter === null ? {} : filter.attribute === 'userName' ? { userName: filter.value } : { externalId: filter.value };
  const page = await scimUsersPage(ctx.db, match, startIndex - 1, count);
  return { users: page.users.map(viewOf), total: page.total };
}

/** Provisions a user: the portal user is made, or the one already here is linked (unless `scim.linkExistingUsers` is false). */
export async function createDirectoryUser(ctx: PortalContext, input: ScimUserInput): Promise<DirectoryUserChange> {
  const userId = asUserId(input.userName);
  const at = ctx.clock.now();
  const readAt = readTimeNow(ctx);
  const scimId = randomUUID();
  const revocationId = newRevocationId(ctx);
  let done: { readonly ended: EndedAccess | null; readonly enabled: WireGuardPeer[] | null };
  try {
    done = await ctx.events.change(ctx.db, async (trx, announce) => {
      // The user's row, if there is one, locked for update first (PostgreSQL): POSTs that link
      // it take turns here. Share-locked, as ensureUser alone locks it, each waited for the
      // first one's SCIM user while that one's disable waited for their share locks: a deadlock.
      await lockUser(trx, userId);
      await refuseTakenName(trx, userId);
      const user = await ensureUser(trx, userId, formatAtom(at));
      // Linking hands the directory a user made otherwise (disable, destroy), unless narrowed.
      if (!user.created && !ctx.config.scim.linkExistingUsers) {
        // A POST for the same new user that committed while this one waited is a repeat, not a stranger.
        await refuseTakenName(trx, userId);
        ctx.logger.warn(
          { userId },
          'SCIM: a POST for a user made otherwise is refused (scim.linkExistingUsers is false); the directory cannot disable or delete it',
        );
        throw notLinked(userId);
      }
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
      return {
        ended: input.active === false ? await inactiveInDirectory(ctx, trx, announce, userId, revocationId) : null,
        enabled: input.active === true ? await activeInDirectory(ctx, trx, announce, user) : null,
      };
    });
  } catch (error) {
    // Two requests for one user at once: the unique index decides.
    if (isUniqueViolation(error)) throw taken(userId);
    throw error;
  }
  const revocationIds = await revokeWhatEnded(ctx, userId, revocationId, done.ended);
  if (done.enabled !== null) await pushPeersOfEnabledUser(ctx, userId, done.enabled, readAt);
  return { user: viewOf(await existingScimUser(ctx, scimId)), revocationIds };
}

/** PUT: the directory's new view of the user. */
export function replaceDirectoryUser(
  ctx: PortalContext,
  scimId: string,
  input: ScimUserInput,
): Promise<DirectoryUserChange> {
  return changeDirectoryUser(ctx, scimId, async () => input);
}

/**
 * PATCH: `change` is applied, in the transaction, to the user as stored, its row locked first:
 * two PATCHes at once each apply to what the other left (one that changes the title and one that
 * calls the user inactive both hold, never the second writing back the title, or the `active`,
 * it read before the first committed).
 */
export function patchDirectoryUser(
  ctx: PortalContext,
  scimId: string,
  change: (current: ScimUserView) => Promise<ScimUserInput>,
): Promise<DirectoryUserChange> {
  return changeDirectoryUser(ctx, scimId, change);
}

async function changeDirectoryUser(
  ctx: PortalContext,
  scimId: string,
  inputOf: (current: ScimUserView) => Promise<ScimUserInput>,
): Promise<DirectoryUserChange> {
  const at = ctx.clock.now();
  const readAt = readTimeNow(ctx);
  const revocationId = newRevocationId(ctx);
  const { userId, ended, enabled, refused } = await ctx.events.change(ctx.db, async (trx, announce) => {
    const current = await lockScimUser(trx, scimId);
    if (current === undefined) throw noSuchScimUser(scimId);
    const input = await inputOf(viewOf(current));
    // The same name in another case is the same userName (RFC 7643): the user id stays as it is.
    if (scimNameKey(input.userName) !== scimNameKey(current.userId)) {
      const why = `userName is the user id on this portal ("${current.userId}") and cannot change; delete the user and create it again`;
      if (input.active !== false) throw new ScimProblem(400, 'mutability', why);
      // A person who left is often renamed and deactivated in one request: the rename is refused,
      // and nothing else of the request is saved, but the deactivation holds. Refused whole, the
      // person would keep their tunnels, and every later request, still renaming, would be too.
      const refusal = new ScimProblem(400, 'mutability', `${why} (the user is disabled, as the same request asked)`);
      const ended = await inactiveInDirectory(ctx, trx, announce, current.userId, revocationId);
      // The request's audit row, written with the disable: its answer, the refusal, and why.
      if (ctx.call !== undefined)
        await announce({
          type: 'admin.call',
          at,
          call: ctx.call,
          status: refusal.status,
          detail: refusal.message,
          connectionIds: [],
          userId: current.userId,
        });
      return { userId: current.userId, ended, enabled: null, refused: refusal };
    }
    await updateScimUser(trx, scimId, {
      externalId: input.externalId,
      attributes: input.attributes,
      updatedAt: formatAtom(at),
    });
    await announce({ type: 'scim.changed', at, resource: 'User', action: 'replaced', scimId, userId: current.userId });
    return {
      userId: current.userId,
      ended:
        input.active === false ? await inactiveInDirectory(ctx, trx, announce, current.userId, revocationId) : null,
      enabled: input.active === true ? await activeInDirectory(ctx, trx, announce, current) : null,
      refused: null,
    };
  });
  const revocationIds = await revokeWhatEnded(ctx, userId, revocationId, ended);
  if (refused !== null) throw refused;
  if (enabled !== null) await pushPeersOfEnabledUser(ctx, userId, enabled, readAt);
  return { user: viewOf(await existingScimUser(ctx, scimId)), revocationIds };
}

/** Deprovisions a user: destroyed, as by destroy (its SCIM user and memberships go with it). */
export async function deleteDirectoryUser(ctx: PortalContext, scimId: string): Promise<RevocationId> {
  const current = await existingScimUser(ctx, scimId);
  try {
    return await destroyUser(ctx, current.userId);
  } catch (error) {
    // Destroyed since it was read (a second DELETE at once): gone, as any User the directory asks for.
    if (error instanceof PortalError && error.code === 'no-such-user') throw noSuchScimUser(scimId);
    throw error;
  }
}

/** Who the portal records as having disabled a user the directory called inactive. */
export const DIRECTORY_DISABLER = '(directory)';

/**
 * The directory calls the user inactive: disabled in the transaction that saves what the
 * directory sent, so the change is saved only with its disable (a failed disable saves nothing,
 * and the directory's retry finds the user as it was). A user disabled already keeps who
 * disabled it: an administrator's disable stays theirs, to be lifted only by an administrator.
 * One only the eduVPN import disabled, it takes over, so that the import, which leaves the
 * directory's disables alone, brings the user nothing eduVPN issued it.
 */
async function inactiveInDirectory(
  ctx: PortalContext,
  trx: Transaction<Database>,
  announce: Announce,
  userId: UserId,
  revocationId: RevocationId,
): Promise<EndedAccess | null> {
  await noteUnderUserLock(trx, userId, false);
  if (await disableExistingUserIfEnabled(ctx, trx, userId, DIRECTORY_DISABLER))
    return endAccessOfDisabledUser(ctx, trx, announce, userId, revocationId);
  if (await takeOverImportDisable(trx, userId, DIRECTORY_DISABLER))
    ctx.logger.info({ userId }, 'the directory calls the user inactive: its disable is the directory’s now');
  return null;
}

/** After the commit: what the directory's disable took leaves the nodes, under its receipt. */
async function revokeWhatEnded(
  ctx: PortalContext,
  userId: UserId,
  revocationId: RevocationId,
  ended: EndedAccess | null,
): Promise<RevocationId[]> {
  if (ended === null) return [];
  await revokeAccessOfDisabledUser(ctx, userId, revocationId, ended);
  return [revocationId];
}

/**
 * The directory calls the user active: enabled again only if the directory disabled it itself,
 * in the transaction that holds the directory's row (a PATCH calling the user inactive that
 * commits after it finds the user enabled, and disables it). One an administrator disabled
 * (during an incident, while the directory still calls the person active) stays disabled until
 * an administrator enables it. Answers the peers to push once it commits, or null.
 */
async function activeInDirectory(
  ctx: PortalContext,
  trx: Transaction<Database>,
  announce: Announce,
  user: { readonly userId: UserId; readonly isDisabled: boolean },
): Promise<WireGuardPeer[] | null> {
  await noteUnderUserLock(trx, user.userId, true);
  if (!user.isDisabled) return null;
  const peers = await enableUserInTransaction(ctx, trx, announce, user.userId, {
    onlyIfDisabledBy: DIRECTORY_DISABLER,
  });
  if (peers === null)
    ctx.logger.info(
      { userId: user.userId },
      'the directory calls the user active, but it was not the directory that disabled it: it stays disabled',
    );
  return peers;
}

/**
 * Keeps the directory's word on `active` with the user's row locked (PostgreSQL): an
 * administrator's enable_user, which reads that word under the same lock, either commits before
 * it (and a disable follows here) or reads it (and is refused).
 */
async function noteUnderUserLock(trx: Transaction<Database>, userId: UserId, active: boolean): Promise<void> {
  await lockUser(trx, userId);
  await noteDirectoryActive(trx, userId, active);
}

async function existingScimUser(ctx: PortalContext, scimId: string): Promise<ScimUserWithState> {
  const user = await findScimUser(ctx.db, scimId);
  if (user === undefined) throw noSuchScimUser(scimId);
  return user;
}

function noSuchScimUser(scimId: string): ScimProblem {
  return new ScimProblem(404, null, `no User with id "${scimId}"`);
}

function notLinked(userId: UserId): ScimProblem {
  return new ScimProblem(
    409,
    'uniqueness',
    `a user "${userId}" exists on this portal, made otherwise than by the directory; it is not handed to the directory while scim.linkExistingUsers is false`,
  );
}

/** A SCIM user of that userName in any case exists already: the directory's User, not a second one. */
async function refuseTakenName(trx: Transaction<Database>, userId: UserId): Promise<void> {
  const existing = await findScimUserNamed(trx, userId);
  if (existing !== undefined) throw taken(existing.userId);
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
