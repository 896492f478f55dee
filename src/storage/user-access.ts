// What disable_user takes from a user once its row is locked: its OAuth authorizations end, its
// enrollment tokens are revoked (their ids answered), its configurations get a new revision (their removal's), and
// its certificates are read. On PostgreSQL in one statement (one round trip instead of four; one
// more per 5,000 configurations beyond the first 5,000),
// on SQLite one by one. Never in the statement that locks the user: PostgreSQL reads what a
// statement began with, and a create that committed while the lock was awaited must be among
// the configurations stamped (its tunnel must leave the nodes too).
import { sql, type Selectable, type Transaction } from 'kysely';
import type { UserId } from '../shared/ids.js';
import { authorizationsOfUserDeletion, deleteAuthorizationsOfUser } from './authorizations.js';
import { certificatesOf, certificatesOfUser, type OpenVpnCertificate } from './certificates.js';
import { isPostgres } from './database.js';
import { enrollmentTokensOfUserRevocation, revokeEnrollmentTokensOfUser } from './enrollment-tokens.js';
import type { CertificatesTable, Database, WireGuardPeersTable } from './schema.js';
import { nextPageAfter, pageOfUser, PEER_ROWS, remainingPagesOfUser, type PageOfUserAnswer } from './user-pages.js';
import { stampPeersOfUser, userPeersOf, type WireGuardPeer } from './wg-peers.js';

export interface UserAccessEnded {
  readonly peers: WireGuardPeer[];
  readonly certificates: OpenVpnCertificate[];
  /** The enrollment tokens revoked. */
  readonly enrollmentTokenIds: string[];
}

/** Call after the user's row is locked by the same transaction, in a statement of its own. */
export async function endAccessOfUser(
  trx: Transaction<Database>,
  userId: UserId,
  at: string,
): Promise<UserAccessEnded> {
  if (!isPostgres(trx)) {
    await deleteAuthorizationsOfUser(trx, userId);
    const enrollmentTokenIds = await revokeEnrollmentTokensOfUser(trx, userId, at);
    return {
      peers: await stampPeersOfUser(trx, userId),
      certificates: await certificatesOfUser(trx, userId),
      enrollmentTokenIds,
    };
  }
  const page = pageOfUser(PEER_ROWS, userId, null, 'stamp');
  const { rows } = await sql<
    PageOfUserAnswer<Selectable<WireGuardPeersTable>> & {
      certificates: Selectable<CertificatesTable>[];
      tokens: string[];
    }
  >`
    WITH ended AS (${authorizationsOfUserDeletion(trx, userId)}),
      revoked AS (${enrollmentTokensOfUserRevocation(trx, userId, at)}),
      ${page.clauses}
    SELECT
      ${page.counts},
      (SELECT coalesce(json_agg(c ORDER BY c.expires_at DESC, c.common_name), '[]'::json)
        FROM certificates c WHERE c.user_id = ${userId}) AS certificates,
      (SELECT coalesce(json_agg(token_id), '[]'::json) FROM revoked) AS tokens`.execute(trx);
  const [row] = rows;
  if (row === undefined) throw new Error('the statement ending a user’s access answered no row');
  // A user with more configurations than a page: the rest in statements of their own.
  const after = nextPageAfter(row);
  const stamped =
    after === null
      ? row.paged
      : [
          ...row.paged,
          ...(await remainingPagesOfUser<Selectable<WireGuardPeersTable>>(trx, PEER_ROWS, userId, after, 'stamp')),
        ];
  return {
    peers: userPeersOf(stamped),
    certificates: certificatesOf(row.certificates),
    enrollmentTokenIds: row.tokens,
  };
}
