// Queries on `imported_records` (migration 0035): each user, WireGuard peer, OpenVPN certificate
// and OAuth authorization the eduVPN import brought, and each configuration it left because its
// user was disabled here (`withheld` 1, migration 0044) or because eduVPN refuses it at connect
// for its profile's `aclPermissionList` (`withheld` 2). A later run reads it to leave what was
// removed here since, and what it left so (a configuration deleted, expired, retired or replaced; a user destroyed; an
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
  /** Left rather than brought, and why. */
  readonly withheld?: WithheldWhy;
}

/**
 * Why the import left a configuration rather than bring it: its user was disabled here while
 * eduVPN had it enabled (`user disabled here`), or it is an OpenVPN certificate eduVPN refuses
 * at connect because its user holds none of its profile's `aclPermissionList` (`acl`).
 */
export type WithheldWhy = 'user disabled here' | 'acl';

/** `imported_records.withheld` of each reason (0: brought). */
const WITHHELD_CODES: Readonly<Record<WithheldWhy, number>> = { 'user disabled here': 1, acl: 2 };

/** What a note tells of a record not here: when it was noted, and whether (and why) it was left (never brought) then. */
export interface ImportedNote {
  readonly importedAt: string;
  readonly withheld: WithheldWhy | false;
}

/** The reason a note's `withheld` code stands for (an unknown non-zero code: left, as by a disabled user). */
function withheldWhy(code: number): WithheldWhy | false {
  if (code === 0) return false;
  return code === WITHHELD_CODES.acl ? 'acl' : 'user disabled here';
}

/** Rows per statement: four columns, far below both dialects' parameter limits. */
const NOTE_ROWS = 500;

/**
 * Notes what an import brought, many per statement; a record noted already keeps its row. The
 * brought and the left go in statements of their own: a statement's rows name the same columns
 * (SQLite would take a row without `withheld` beside one with it as NULL, not the default).
 */
export async function noteImportedRecords(db: Db, records: readonly ImportedRecord[]): Promise<void> {
  await noteSome(
    db,
    records.filter((record) => record.withheld === undefined),
  );
  await noteSome(
    db,
    records.filter((record) => record.withheld !== undefined),
  );
}

async function noteSome(db: Db, records: readonly ImportedRecord[]): Promise<void> {
  for (const group of sizeLimitedGroups(records, () => 1, NOTE_ROWS)) {
    await db
      .insertInto('imported_records')
      .values(
        group.map((record) => ({
          kind: record.kind,
          record_id: record.recordId,
          imported_at: record.importedAt,
          expires_at: record.expiresAt,
          // Only when set: the column's default says brought (and a schema before 0044 has none).
          ...(record.withheld === undefined ? {} : { withheld: WITHHELD_CODES[record.withheld] }),
        })),
      )
      .onConflict((conflict) => conflict.columns(['kind', 'record_id']).doNothing())
      .execute();
  }
}

/**
 * Whether the record a row of `imported_records` names is here: its user, peer, certificate or
 * authorization row; with `unexpiredAt`, a peer or certificate only if it is valid then.
 */
function isHere(kind: ImportedRecordKind, eb: ExpressionBuilder<Database, 'imported_records'>, unexpiredAt?: string) {
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
          .whereRef('wg_peers.public_key', '=', 'imported_records.record_id')
          .$if(unexpiredAt !== undefined, (query) => query.where('wg_peers.expires_at', '>', unexpiredAt ?? '')),
      );
    case 'openvpn':
      return eb.exists(
        eb
          .selectFrom('certificates')
          .select('certificates.common_name')
          .whereRef('certificates.common_name', '=', 'imported_records.record_id')
          .$if(unexpiredAt !== undefined, (query) => query.where('certificates.expires_at', '>', unexpiredAt ?? '')),
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
 * Of `recordIds` of `kind`, those an earlier import noted that are not here (removed here since,
 * or left by it), each with its note.
 */
export async function importedRecordsGone(
  db: Db,
  kind: ImportedRecordKind,
  recordIds: readonly string[],
): Promise<Map<string, ImportedNote>> {
  const found = new Map<string, ImportedNote>();
  for (const row of await notesOf(db, kind, recordIds, 'gone only'))
    found.set(row.record_id, { importedAt: row.imported_at, withheld: withheldWhy(row.withheld) });
  return found;
}

/** Of `recordIds` of `kind`, those an earlier import noted (here or not), each with when it was brought. */
export async function importedRecordsNoted(
  db: Db,
  kind: ImportedRecordKind,
  recordIds: readonly string[],
): Promise<Map<string, string>> {
  return new Map((await notesOf(db, kind, recordIds, 'here or gone')).map((row) => [row.record_id, row.imported_at]));
}

async function notesOf(
  db: Db,
  kind: ImportedRecordKind,
  recordIds: readonly string[],
  which: 'gone only' | 'here or gone',
): Promise<{ record_id: string; imported_at: string; withheld: number }[]> {
  const found: { record_id: string; imported_at: string; withheld: number }[] = [];
  for (const ids of sizeLimitedGroups([...new Set(recordIds)], () => 1, NOTE_ROWS)) {
    const rows = await db
      .selectFrom('imported_records')
      .select(['record_id', 'imported_at', 'withheld'])
      .where('kind', '=', kind)
      .where('record_id', 'in', ids)
      .$if(which === 'gone only', (query) => query.where((eb) => eb.not(isHere(kind, eb))))
      .execute();
    found.push(...rows);
  }
  return found;
}

/** A configuration an import brought that is still valid here, with its note. */
export interface ImportedConfigurationHere {
  readonly kind: 'wireguard' | 'openvpn';
  readonly recordId: string;
  readonly importedAt: string;
  /** Its expiry in eduVPN when it was brought. */
  readonly expiresAt: string;
}

/** Notes read per query by importedConfigurationsHere. */
const CONFIGURATIONS_HERE_PAGE = 5000;

/**
 * Every configuration an import brought (not left) whose eduVPN expiry is after `now` and that
 * is here and unexpired, page by page in (kind, record id) order: what a later run expects to
 * find in eduVPN still.
 */
export async function* importedConfigurationsHere(db: Db, now: string): AsyncGenerator<ImportedConfigurationHere[]> {
  let after: NoteCursor | null = null;
  for (;;) {
    const page: ImportedConfigurationHere[] = await configurationsHerePage(db, now, after);
    if (page.length > 0) yield page;
    const last = page[page.length - 1];
    if (last === undefined || page.length < CONFIGURATIONS_HERE_PAGE) return;
    after = { kind: last.kind, recordId: last.recordId };
  }
}

interface NoteCursor {
  readonly kind: string;
  readonly recordId: string;
}

async function configurationsHerePage(
  db: Db,
  now: string,
  after: NoteCursor | null,
): Promise<ImportedConfigurationHere[]> {
  const rows = await db
    .selectFrom('imported_records')
    .select(['kind', 'record_id', 'imported_at', 'expires_at'])
    .where('kind', 'in', ['wireguard', 'openvpn'])
    .where('withheld', '=', 0)
    .where('expires_at', '>', now)
    .where((eb) =>
      eb.or([
        eb.and([eb('kind', '=', 'wireguard'), isHere('wireguard', eb, now)]),
        eb.and([eb('kind', '=', 'openvpn'), isHere('openvpn', eb, now)]),
      ]),
    )
    .$if(after !== null, (query) =>
      query.where((eb) =>
        eb.or([
          eb('kind', '>', after?.kind ?? ''),
          eb.and([eb('kind', '=', after?.kind ?? ''), eb('record_id', '>', after?.recordId ?? '')]),
        ]),
      ),
    )
    .orderBy('kind')
    .orderBy('record_id')
    .limit(CONFIGURATIONS_HERE_PAGE)
    .execute();
  return rows.map((row) => ({
    kind: row.kind === 'openvpn' ? 'openvpn' : 'wireguard',
    recordId: row.record_id,
    importedAt: row.imported_at,
    expiresAt: row.expires_at ?? '',
  }));
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
