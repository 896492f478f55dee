// What an earlier import brought and was removed here since, so that a later run leaves it: a
// configuration deleted, expired, retired or replaced here, an authorization deleted here (by
// delete_user_authorizations, disable_user or the housekeeping once expired), a user destroyed
// here (and with it its configurations and authorizations, also those eduVPN issued after that
// import), a user disabled here (it stays disabled, and gets no authorization from eduVPN). The
// eduVPN server still holds them; bringing them again would put a revoked configuration back on
// its node, or a deleted authorization back on its user.
import type { UserId } from '../../shared/ids.js';
import type { Db } from '../../storage/database.js';
import { importedRecordsGone, importedRecordsNoted } from '../../storage/imported-records.js';

/** Why a configuration brought earlier and gone here is left. */
function revokedHere(importedAt: string): string {
  return `brought by an import at ${importedAt} and revoked here since (deleted, expired, or its device retired or replaced)`;
}

/** Why a user brought earlier and gone here is left. */
export function destroyedHere(importedAt: string): string {
  return `brought by an import at ${importedAt} and destroyed here since`;
}

/** Why a record of a user destroyed here is left. */
export function ofUserDestroyedHere(userId: UserId, importedAt: string): string {
  return `its user ${userId} was brought by an import at ${importedAt} and destroyed here since`;
}

/** Why a user brought earlier, disabled here and enabled in eduVPN is left: the import never enables anyone. */
export function disabledHere(importedAt: string): string {
  return `brought by an import at ${importedAt} and disabled here (eduVPN has it enabled): it stays disabled`;
}

/** Of `userIds` (users disabled here), those an earlier import brought, each with when it was brought. */
export async function usersBroughtBefore(db: Db, userIds: readonly UserId[]): Promise<Map<string, string>> {
  return importedRecordsNoted(db, 'user', userIds);
}

/** Of `userIds`, those an earlier import brought that were destroyed here since, each with when it was brought. */
export async function usersDestroyedHere(db: Db, userIds: readonly UserId[]): Promise<Map<string, string>> {
  return importedRecordsGone(db, 'user', userIds);
}

/**
 * Of `configurations`, those to leave, each with why: brought by an earlier import and gone
 * here since, or of a user destroyed here since.
 */
export async function configurationsRemovedHere(
  db: Db,
  proto: 'wireguard' | 'openvpn',
  configurations: readonly { readonly connectionId: string; readonly userId: UserId }[],
): Promise<Map<string, string>> {
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
  const reasons = new Map<string, string>();
  for (const [connectionId, importedAt] of gone) reasons.set(connectionId, revokedHere(importedAt));
  for (const { connectionId, userId } of others) {
    const userImportedAt = users.get(userId);
    if (userImportedAt !== undefined) reasons.set(connectionId, ofUserDestroyedHere(userId, userImportedAt));
  }
  return reasons;
}

/**
 * Of `authorizations` (none of them here), those to leave, each with why: of a user destroyed
 * here since an earlier import brought it, brought by an earlier import and deleted here since,
 * or of a user disabled here (disabling ended its authorizations, for good).
 */
export async function authorizationsRemovedHere(
  db: Db,
  authorizations: readonly { readonly authKey: string; readonly userId: UserId }[],
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
  for (const { authKey, userId } of authorizations) {
    const userImportedAt = users.get(userId);
    const importedAt = gone.get(authKey);
    if (userImportedAt !== undefined) reasons.set(authKey, ofUserDestroyedHere(userId, userImportedAt));
    else if (importedAt !== undefined)
      reasons.set(
        authKey,
        `brought by an import at ${importedAt} and deleted here since (delete_user_authorizations, disable_user, or expired)`,
      );
    else if (usersDisabledHere.has(userId))
      reasons.set(authKey, `its user ${userId} is disabled here, which ended its authorizations`);
  }
  return reasons;
}
