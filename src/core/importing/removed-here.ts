// What this portal took away that eduVPN still holds, so that an import leaves it: a
// configuration an earlier import brought and was deleted, expired, retired or replaced here
// since; an authorization it brought and was deleted here since (by delete_user_authorizations,
// disable_user or the housekeeping once expired); a user destroyed here (whether an import
// brought it or it was made here, kept for good by a digest of its id: src/storage/destroyed-users.ts),
// and with it all its configurations and authorizations, also those eduVPN issued it later, or,
// when it was made again here since, those eduVPN issued it before it was made again; a user disabled
// here (it stays disabled, and gets no authorization from eduVPN, and no configuration that is not
// here either, unless only the import disabled it: the import notes those it leaves, so that they
// stay out once the user is enabled again). Bringing them would put a revoked configuration back
// on its node, or a deleted authorization back on its user.
import type { UserId } from '../../shared/ids.js';
import { certificatesWithNames } from '../../storage/certificates.js';
import type { Db } from '../../storage/database.js';
import { destroyedUsersAmong } from '../../storage/destroyed-users.js';
import {
  importedRecordsGone,
  importedRecordsNoted,
  type ImportedNote,
  type WithheldWhy,
} from '../../storage/imported-records.js';
import { usersCreatedAt, usersDisabledHereAmong, usersDisabledHereIds } from '../../storage/users.js';
import { latestDestroyReceipts } from '../../storage/revocations.js';
import { peersWithKeys } from '../../storage/wg-peers.js';

/** Why a configuration an earlier import noted and is not here is left. */
function revokedHere(note: ImportedNote): string {
  switch (note.withheld) {
    case 'user disabled here':
      return `left by an import at ${note.importedAt} while its user was disabled here: it stays left`;
    case 'acl':
      return `left by an import at ${note.importedAt} because eduVPN refused it at connect (its user held none of its profile's aclPermissionList): it stays left`;
    case false:
      return `brought by an import at ${note.importedAt} and revoked here since (deleted, expired, or its device retired or replaced)`;
  }
}

/** A record the import leaves, why, and whether (and why) it notes it as left (so that it stays out). */
export interface Removal {
  readonly reason: string;
  readonly withheld: WithheldWhy | false;
}

/** What this portal knows of a user's destroy here. */
export type DestroyedHere =
  /** Not here: brought by an import at `importedAt` (the note of that still kept), destroyed since. */
  | { readonly how: 'brought'; readonly importedAt: string }
  /** Not here: destroyed at `destroyedAt` (made here, or the note of its import pruned since). */
  | { readonly how: 'destroyed'; readonly destroyedAt: string }
  /** Here: made again (its `created_at` here: `madeAt`) since its destroy at `destroyedAt`. */
  | { readonly how: 'made again'; readonly destroyedAt: string; readonly madeAt: string };

/** Why a user destroyed here (and not made again since) is left. */
export function userDestroyedHere(destroyed: DestroyedHere): string {
  return destroyed.how === 'brought'
    ? `brought by an import at ${destroyed.importedAt} and destroyed here since`
    : `destroyed here at ${destroyed.destroyedAt}`;
}

/**
 * Why a configuration or authorization of `userId`, which eduVPN issued at `issuedAt`, is left
 * for its user's destroy here: all of a user not here, and of one made again since its destroy
 * those issued before it was made again. Undefined: not left for that.
 */
function ofUserDestroyedHere(
  userId: UserId,
  destroyed: DestroyedHere | undefined,
  issuedAt: string,
): string | undefined {
  if (destroyed === undefined) return undefined;
  switch (destroyed.how) {
    case 'brought':
      return `its user ${userId} was brought by an import at ${destroyed.importedAt} and destroyed here since`;
    case 'destroyed':
      return `its user ${userId} was destroyed here at ${destroyed.destroyedAt}`;
    case 'made again': {
      // What eduVPN issued between the destroy and the making again was not this user's either.
      const { destroyedAt, madeAt } = destroyed;
      return issuedAt <= destroyedAt || issuedAt <= madeAt
        ? `issued before its user ${userId} was made again here (destroyed here at ${destroyedAt}, made again at ${madeAt})`
        : undefined;
    }
  }
}

/** Why a user brought earlier, disabled here and enabled in eduVPN is left: the import never enables anyone. */
export function disabledHere(importedAt: string): string {
  return `brought by an import at ${importedAt} and disabled here (eduVPN has it enabled): it stays disabled`;
}

/**
 * The users disabled here when the import begins, but those only the import disabled (it brought
 * them disabled, as eduVPN had them, and nobody here disabled them since).
 */
export async function usersDisabledHereAtStart(db: Db): Promise<Set<UserId>> {
  return new Set(await usersDisabledHereIds(db));
}

/** Of `userIds` (users disabled here), those an earlier import brought, each with when it was brought. */
export async function usersBroughtBefore(db: Db, userIds: readonly UserId[]): Promise<Map<string, string>> {
  return importedRecordsNoted(db, 'user', userIds);
}

/**
 * Of `userIds`, those destroyed here: noted as brought by an earlier import and not here, or
 * named by `destroyed_users` or by a destroy receipt (here again or not). The receipts: an
 * instance on a version before `destroyed_users` (migration 0043), still running during a rolling
 * upgrade, destroys with a receipt only, kept for `auditLogRetention`.
 */
export async function usersDestroyedHere(db: Db, userIds: readonly UserId[]): Promise<Map<UserId, DestroyedHere>> {
  const brought = await importedRecordsGone(db, 'user', userIds);
  const destroyed = await destroyedUsersAmong(db, userIds);
  for (const [userId, at] of await latestDestroyReceipts(db, userIds)) {
    const known = destroyed.get(userId);
    if (known === undefined || at > known) destroyed.set(userId, at);
  }
  const madeAt = await usersCreatedAt(
    db,
    [...destroyed.keys()].filter((userId) => !brought.has(userId)),
  );
  const found = new Map<UserId, DestroyedHere>();
  for (const [userId, { importedAt }] of brought) found.set(userId as UserId, { how: 'brought', importedAt });
  for (const [userId, destroyedAt] of destroyed) {
    if (brought.has(userId)) continue;
    const made = madeAt.get(userId);
    found.set(
      userId,
      made === undefined ? { how: 'destroyed', destroyedAt } : { how: 'made again', destroyedAt, madeAt: made },
    );
  }
  return found;
}

/**
 * Of `configurations`, those to leave, each with why: noted by an earlier import and not here
 * (brought and revoked here since, or left then), of a user destroyed here, or, when not here, of
 * a user disabled here (noted as left): one in `disabledAtStart`, or disabled here as `db` reads
 * it, without a lock (the import checks the users of what it brings again, locked, just before
 * it commits: src/core/importing/apply.ts). The users only the import disabled are neither:
 * their configurations are brought (off the nodes), so that a run that stopped after the users
 * continues.
 */
export async function configurationsRemovedHere(
  db: Db,
  proto: 'wireguard' | 'openvpn',
  configurations: readonly { readonly connectionId: string; readonly userId: UserId; readonly createdAt: string }[],
  disabledAtStart: ReadonlySet<UserId>,
): Promise<Map<string, Removal>> {
  const gone = await importedRecordsGone(
    db,
    proto,
    configurations.map((configuration) => configuration.connectionId),
  );
  const others = configurations.filter((configuration) => !gone.has(configuration.connectionId));
  const users = await usersDestroyedHere(
    db,
    others.map((configuration) => configuration.userId),
  );
  const here = await configurationsHere(db, proto, others);
  // Only the users of configurations not here: those the import may bring.
  const disabledNow = await usersDisabledHereAmong(
    db,
    others
      .filter((configuration) => !here.has(configuration.connectionId))
      .map((configuration) => configuration.userId),
  );
  const disabled = (userId: UserId): boolean => disabledAtStart.has(userId) || disabledNow.has(userId);
  const removals = new Map<string, Removal>();
  for (const [connectionId, note] of gone) removals.set(connectionId, { reason: revokedHere(note), withheld: false });
  for (const { connectionId, userId, createdAt } of others) {
    const reason = ofUserDestroyedHere(userId, users.get(userId), createdAt);
    if (reason !== undefined) removals.set(connectionId, { reason, withheld: false });
    else if (disabled(userId) && !here.has(connectionId))
      removals.set(connectionId, {
        reason: `its user ${userId} is disabled here: the import brings it no configuration, also once enabled again`,
        withheld: 'user disabled here',
      });
  }
  return removals;
}

/** Of `configurations`, those here (by public key or common name). */
async function configurationsHere(
  db: Db,
  proto: 'wireguard' | 'openvpn',
  configurations: readonly { readonly connectionId: string }[],
): Promise<Set<string>> {
  const ids = configurations.map((configuration) => configuration.connectionId);
  if (ids.length === 0) return new Set();
  const found =
    proto === 'wireguard'
      ? (await peersWithKeys(db, ids)).map((peer) => peer.publicKey as string)
      : (await certificatesWithNames(db, ids)).map((certificate) => certificate.commonName as string);
  return new Set(found);
}

/**
 * Of `authorizations` (none of them here), those to leave, each with why: of a user destroyed
 * here, brought by an earlier import and deleted here since, or of a user disabled here
 * (disabling ended its authorizations, for good).
 */
export async function authorizationsRemovedHere(
  db: Db,
  authorizations: readonly { readonly authKey: string; readonly userId: UserId; readonly authorizedAt: string }[],
  usersDisabledHere: ReadonlySet<UserId>,
): Promise<Map<string, string>> {
  const users = await usersDestroyedHere(
    db,
    authorizations.map((authorization) => authorization.userId),
  );
  const gone = await importedRecordsGone(
    db,
    'authorization',
    authorizations.map((authorization) => authorization.authKey),
  );
  const reasons = new Map<string, string>();
  for (const { authKey, userId, authorizedAt } of authorizations) {
    const ofDestroyed = ofUserDestroyedHere(userId, users.get(userId), authorizedAt);
    const note = gone.get(authKey);
    if (ofDestroyed !== undefined) reasons.set(authKey, ofDestroyed);
    else if (note !== undefined)
      reasons.set(
        authKey,
        `brought by an import at ${note.importedAt} and deleted here since (delete_user_authorizations, disable_user, or expired)`,
      );
    else if (usersDisabledHere.has(userId))
      reasons.set(authKey, `its user ${userId} is disabled here, which ended its authorizations`);
  }
  return reasons;
}
