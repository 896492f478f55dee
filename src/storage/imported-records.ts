// Queries on `imported_records` (migration 0035): each user, WireGuard peer, OpenVPN certificate
// and OAuth authorization the eduVPN import brought. A later run reads it to leave what was
// removed here since (a configuration deleted, expired, retired or replaced; a user destroyed; an
// authorization deleted): a revocation is final, an import included. The daily housekeeping
// prunes a configuration's or authorization's row once its eduVPN expiry has passed (eduVPN's
// copy is expired too, and the import leaves it; an authorization's counts the configurations
// naming it) and a user's once the user is gone here and the receipt of its destroy was pruned
// (`auditLogRetention`, or a legal hold's end): as long as that proof of the destroy is kept, so
// is the note naming the user; after that `destroyed_users` (src/storage/destroyed-users.ts)
// keeps the user out, by a digest of its id.
import type { ExpressionBuilder } from 'kysely';
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import type { Db } from './database.js';
import type { Database } from './schema.js';

/** What was brought: a user, a configuration of either protocol, or an OAuth authorization. */
export type ImportedRecordKind = 'user' | 'wireguard' | 'openvpn' | 'authorization';

export interface ImportedRecord {
  readonly kind: ImportedRecordKind;
  /** The user id, WireGuard public key, OpenVPN common name or authorization key. */
  readonly recordId: string;
  readonly importedAt: string;
  /**
   * A configuration's expiry in eduVPN (ATOM); an authorization's, or the latest of the
   * configurations naming it when later (eduVPN brings an expired one a configuration names);
   * null for a user.
   */
  readonly expiresAt: string | null;
}

/** Rows per statement: four columns, far below both dialects' parameter limits. */
const NOTE_ROWS = 500;

/** Notes what an import brought, many per statement; a record noted already keeps its row. */
export async function noteImportedRecords(db: Db, records: readonly ImportedRecord[]): Promise<void> {
  for (const group of sizeLimitedGroups(records, () => 1, NOTE_ROWS)) {
    await db
      .insertInto('imported_records')
      .values(
        group.map((record) => ({
          kind: record.kind,
          record_id: record.recordId,
          imported_at: record.importedAt,
          expires_at: record.expiresAt,
        })),
      )
      .onConflict((conflict) => conflict.columns(['kind', 'record_id']).doNothing())
      .execute();
  }
}

/** Whether the record a row of `imported_records` names is here: its user, peer, certificate or authorization row. */
function isHere(kind: ImportedRecordKind, eb: ExpressionBuilder<Database, 'imported_records'>) {
  switch (kind) {
    case 'user':
      return eb.exists(
        eb.selectFrom('users').select('users.user_id').whereRef('users.user_id', '=', 'imported_records.record_id'),
      );
    case 'wireguard':
      return eb.exists(
        eb
          .selectFrom('wg_peers')
          .select('wg_peers.public_key')
          .whereRef('wg_peers.public_key', '=', 'imported_records.record_id'),
      );
    case 'openvpn':
      return eb.exists(
        eb
          .selectFrom('certificates')
          .select('certificates.common_name')
          .whereRef('certificates.common_name', '=', 'imported_records.record_id'),
      );
    case 'authorization':
      return eb.exists(
        eb
          .selectFrom('oauth_authorizations')
          .select('oauth_authorizations.auth_key')
          .whereRef('oauth_authorizations.auth_key', '=', 'imported_records.record_id'),
      );
  }
}

/**
 * Of `recordIds` of `kind`, those an earlier import brought that are not here any more (removed
 * here since), each with when it was brought.
 */
export function importedRecordsGone(
  db: Db,
  kind: ImportedRecordKind,
  recordIds: readonly string[],
): Promise<Map<string, string>> {
  return importedAt(db, kind, recordIds, 'gone only');
}

/** Of `recordIds` of `kind`, those an earlier import noted (here or not), each with when it was brought. */
export function importedRecordsNoted(
  db: Db,
  kind: ImportedRecordKind,
  recordIds: readonly string[],
): Promise<Map<string, string>> {
  return importedAt(db, kind, recordIds, 'here or gone');
}

async function importedAt(
  db: Db,
  kind: ImportedRecordKind,
  recordIds: readonly string[],
  which: 'gone only' | 'here or gone',
): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const ids of sizeLimitedGroups([...new Set(recordIds)], () => 1, NOTE_ROWS)) {
    const rows = await db
      .selectFrom('imported_records')
      .select(['record_id', 'imported_at'])
      .where('kind', '=', kind)
      .where('record_id', 'in', ids)
      .$if(which === 'gone only', (query) => query.where((eb) => eb.not(isHere(kind, eb))))
      .execute();
    for (const row of rows) found.set(row.record_id, row.imported_at);
  }
  return found;
}

/**
 * The daily pruning: configurations and authorizations whose eduVPN expiry is past `now`, and
 * users gone here whom no destroy receipt names any more. Answers how many rows went.
 */
export async function pruneImportedRecords(db: Db, now: string): Promise<number> {
  const configurations = await db
    .deleteFrom('imported_records')
    .where('kind', 'in', ['wireguard', 'openvpn', 'authorization'])
    .where('expires_at', '<=', now)
    .executeTakeFirst();
  const users = await db
    .deleteFrom('imported_records')
    .where('kind', '=', 'user')
    .where((eb) =>
      eb.and([
        eb.not(isHere('user', eb)),
        eb.not(
          eb.exists(
            eb
              .selectFrom('revocations')
              .select('revocations.revocation_id')
              .where('revocations.reason', '=', 'destroy')
              .whereRef('revocations.user_id', '=', 'imported_records.record_id'),
          ),
        ),
      ]),
    )
    .executeTakeFirst();
  return Number(configurations.numDeletedRows) + Number(users.numDeletedRows);
}
