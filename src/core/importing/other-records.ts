// The eduVPN records other than configurations, page by page, against this portal: users (the same
// id is the same user, unless the disabled flag differs; an id this portal cannot hold is a
// conflict, as is every authorization and history row naming it; one destroyed here is left,
// brought by an earlier import or made here, and so is one an import brought that is disabled here
// while eduVPN has it enabled: it stays disabled), OAuth authorizations (those a configuration
// names, or not expired; one an earlier import brought and deleted here since is left, and so are a
// destroyed or disabled user's), the connection log (each row with a log id derived from the row,
// so a second run finds it; one that ended before `connectionLogRetention` is left, as the
// retention here deleted it or would, unless a legal hold keeps its user's history; an open
// WireGuard row is brought closed at the import) and the daily statistics.
import { createHash } from 'node:crypto';
import type {
  EduVpnAuthorization,
  EduVpnConnectionLogEntry,
  EduVpnDailyStatistics,
  EduVpnUser,
} from '../../eduvpn/deployment.js';
import { asNodeNumber } from '../../shared/ids.js';
import { authorizationsWithKeys, type Authorization } from '../../storage/authorizations.js';
import { storedLogIds, type ImportedConnection } from '../../storage/connection-log.js';
import type { Db } from '../../storage/database.js';
import { dailyStatsOf, type DailyStats } from '../../storage/statistics.js';
import { usersWithIds, type ImportedUser } from '../../storage/users.js';
import {
  emptyOutcome,
  type ImportFacts,
  ofUnusableUser,
  type PageOutcome,
  unusableUserId,
  withoutUser,
} from './configurations.js';
import {
  authorizationsRemovedHere,
  disabledHere,
  userDestroyedHere,
  usersBroughtBefore,
  usersDestroyedHere,
} from './removed-here.js';

/** The node of a history row whose configuration eduVPN no longer has: its first (default) node. */
const UNKNOWN_NODE = asNodeNumber(0);

/**
 * Checks a page of users; notes in `facts` those disabled here, whose authorizations the
 * authorizations' check (after this one, in the plan and in the import) leaves.
 */
export async function checkUsers(
  db: Db,
  page: readonly EduVpnUser[],
  facts: ImportFacts,
): Promise<PageOutcome<ImportedUser>> {
  const outcome = emptyOutcome<ImportedUser>();
  // Named first, and asked of nothing here: no column here holds such an id.
  const usable = page.filter((user) => {
    const reason = unusableUserId(user.userId);
    if (reason !== undefined) outcome.conflicts.push({ kind: 'users', record: user.userId, reason });
    return reason === undefined;
  });
  const here = await usersWithIds(
    db,
    usable.map((user) => user.userId),
  );
  const destroyed = await usersDestroyedHere(
    db,
    usable.filter((user) => !here.has(user.userId)).map((user) => user.userId),
  );
  const disabledHereOnly = await usersBroughtBefore(
    db,
    usable.filter((user) => !user.isDisabled && here.get(user.userId)?.isDisabled === true).map((user) => user.userId),
  );
  for (const user of usable) {
    const stored = here.get(user.userId);
    // Disabled here by anyone but the import (as for the configurations): a user the import brought
    // disabled keeps its authorizations, so that a run that stopped after the users continues.
    if (stored?.disabledHere === true) facts.usersDisabledHere.add(user.userId);
    const destroyedHere = destroyed.get(user.userId);
    const disabledImportedAt = disabledHereOnly.get(user.userId);
    if (destroyedHere !== undefined)
      outcome.removedHere.push({ kind: 'users', record: user.userId, reason: userDestroyedHere(destroyedHere) });
    else if (disabledImportedAt !== undefined)
      outcome.removedHere.push({ kind: 'users', record: user.userId, reason: disabledHere(disabledImportedAt) });
    else if (stored === undefined)
      outcome.bring.push({
        userId: user.userId,
        createdAt: facts.earliestConfiguration.get(user.userId) ?? user.lastSeen,
        lastSeen: user.lastSeen,
        permissionList: user.permissionList,
        authData: user.authData,
        isDisabled: user.isDisabled,
      });
    else if (stored.isDisabled === user.isDisabled) outcome.alreadyHere++;
    else
      outcome.conflicts.push({
        kind: 'users',
        record: user.userId,
        reason: `the user is ${stored.isDisabled ? 'disabled' : 'enabled'} here and ${user.isDisabled ? 'disabled' : 'enabled'} in eduVPN`,
      });
  }
  return outcome;
}

export async function checkAuthorizations(
  db: Db,
  page: readonly EduVpnAuthorization[],
  facts: ImportFacts,
): Promise<PageOutcome<Authorization>> {
  const outcome = emptyOutcome<Authorization>();
  const wanted = page.filter((authorization) => {
    const keep = authorization.expiresAt > facts.now || facts.namedAuthorizations.has(authorization.authKey);
    if (!keep) outcome.expired++;
    // A user id this portal cannot hold is asked of nothing here (PostgreSQL refuses a NUL in a query too).
    const unusable = keep ? ofUnusableUser(authorization) : undefined;
    if (unusable !== undefined)
      outcome.conflicts.push({ kind: 'authorizations', record: authorization.authKey, reason: unusable });
    return keep && unusable === undefined;
  });
  const here = new Map(
    (
      await authorizationsWithKeys(
        db,
        wanted.map((authorization) => authorization.authKey),
      )
    ).map((stored) => [stored.authKey, stored]),
  );
  const removed = await authorizationsRemovedHere(
    db,
    wanted.filter((authorization) => !here.has(authorization.authKey)),
    facts.usersDisabledHere,
  );
  for (const authorization of wanted) {
    const stored = here.get(authorization.authKey);
    const reason = removed.get(authorization.authKey);
    if (reason !== undefined)
      outcome.removedHere.push({ kind: 'authorizations', record: authorization.authKey, reason });
    else if (!authorization.userFound)
      outcome.conflicts.push({
        kind: 'authorizations',
        record: authorization.authKey,
        reason: withoutUser(authorization),
      });
    else if (stored === undefined) outcome.bring.push(authorization);
    else if (
      stored.userId === authorization.userId &&
      stored.clientId === authorization.clientId &&
      stored.authorizedAt === authorization.authorizedAt
    )
      outcome.alreadyHere++;
    else
      outcome.conflicts.push({
        kind: 'authorizations',
        record: authorization.authKey,
        reason: `the authorization key is used here by another authorization (user ${stored.userId}, client ${stored.clientId})`,
      });
  }
  return outcome;
}

/** The expiry an authorization's note keeps: its own, or the latest of the unexpired configurations naming it. */
export function authorizationNoteExpiry(authorization: Authorization, facts: ImportFacts): string {
  const named = facts.namedAuthorizations.get(authorization.authKey);
  return named !== undefined && named > authorization.expiresAt ? named : authorization.expiresAt;
}

/**
 * The log id of an eduVPN history row: a name-based UUID (version 8) of what identifies the
 * session, so the same row gets the same id on every run: its user as the row has it, not the
 * user eduVPN's database matched it to, which a run after that user was deleted would not find.
 */
export function importedLogId(entry: EduVpnConnectionLogEntry): string {
  const digest = createHash('sha256')
    .update(
      JSON.stringify([
        'eduvpn',
        entry.vpnProto,
        entry.connectionId,
        entry.connectedAt,
        entry.writtenUserId,
        entry.profileId,
      ]),
    )
    .digest();
  digest[6] = 0x80 | ((digest[6] ?? 0) & 0x0f);
  digest[8] = 0x80 | ((digest[8] ?? 0) & 0x3f);
  const hex = digest.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export async function checkConnectionLog(
  db: Db,
  page: readonly EduVpnConnectionLogEntry[],
  facts: ImportFacts,
): Promise<PageOutcome<ImportedConnection>> {
  const outcome = emptyOutcome<ImportedConnection>();
  const rows = page.map((entry) => ({
    ...entry,
    // eduVPN opens a WireGuard row when it creates the configuration and closes it when it deletes
    // it: an open one says the configuration held its addresses, not that a device was online.
    // Closed at the import (without byte counts, eduVPN has none), it is history here, not a
    // session the first pass would end with a session.ended for every idle device.
    disconnectedAt: entry.disconnectedAt ?? (entry.vpnProto === 'wireguard' ? facts.now : null),
    logId: importedLogId(entry),
    nodeNumber: facts.nodeOfConnection.get(entry.connectionId) ?? UNKNOWN_NODE,
  }));
  const here = await storedLogIds(
    db,
    rows.map((row) => row.logId),
  );
  for (const row of rows) {
    if (here.has(row.logId)) outcome.alreadyHere++;
    else if (pastRetention(row, facts)) outcome.expired++;
    else {
      const unusable = ofUnusableUser(row, 'the user of this history row');
      if (unusable === undefined) outcome.bring.push(row);
      else
        outcome.conflicts.push({
          kind: 'connectionLog',
          record: `${row.connectionId} connected at ${row.connectedAt}`,
          reason: unusable,
        });
    }
  }
  return outcome;
}

/**
 * Whether a history row ended before the retention here: the housekeeping deleted it (or would),
 * so it is not brought back, unless a legal hold keeps its user's history.
 */
function pastRetention(entry: EduVpnConnectionLogEntry, facts: ImportFacts): boolean {
  return (
    entry.disconnectedAt !== null && entry.disconnectedAt < facts.historySince && !facts.heldUsers.has(entry.userId)
  );
}

export async function checkDailyStatistics(
  db: Db,
  page: readonly EduVpnDailyStatistics[],
): Promise<PageOutcome<DailyStats>> {
  const outcome = emptyOutcome<DailyStats>();
  const here = new Map((await dailyStatsOf(db, page)).map((row) => [`${row.date} ${row.profileId}`, row]));
  for (const day of page) {
    const stored = here.get(`${day.date} ${day.profileId}`);
    if (stored === undefined) outcome.bring.push(day);
    else if (stored.maxConnectionCount === day.maxConnectionCount && stored.uniqueUserCount === day.uniqueUserCount)
      outcome.alreadyHere++;
    // This portal ran that day before the move and counted nobody: eduVPN's figures are the day's.
    else if (stored.maxConnectionCount === 0 && stored.uniqueUserCount === 0) outcome.bring.push(day);
    else
      outcome.conflicts.push({
        kind: 'dailyStatistics',
        record: `${day.date} ${day.profileId}`,
        reason: `this portal has other figures for that day (${stored.maxConnectionCount} connections, ${stored.uniqueUserCount} users)`,
      });
  }
  return outcome;
}
