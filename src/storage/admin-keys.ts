// Queries on `admin_keys`: the named, scoped, expiring credentials of the Admin API. Only a
// keyed hash of each key is stored (src/keys/admin-key-token.ts).
import { z } from 'zod';
import { KEY_SCOPES, type KeyScope } from '../protocol/admin-api.js';
import { asProfileId, type ProfileId } from '../shared/ids.js';
import { isPostgres, type Db } from './database.js';
import type { AdminKeysTable } from './schema.js';

export interface StoredAdminKey {
  readonly keyId: string;
  readonly name: string;
  readonly scope: KeyScope;
  /** null: every profile. */
  readonly profiles: readonly ProfileId[] | null;
  /** null: only `adminApi.allowList` applies. */
  readonly allowList: readonly string[] | null;
  readonly secretHash: string;
  readonly createdAt: string;
  readonly expiresAt: string | null;
  readonly lifetime: string | null;
  readonly revokedAt: string | null;
  readonly replacedBy: string | null;
  /** The id of the first key of its line: rotated keys keep it; a new key with a reused name starts its own. */
  readonly lineage: string;
  readonly lastUsedAt: string | null;
  readonly lastUsedAddress: string | null;
}

const stringList = z.array(z.string());
const scopeSchema = z.enum(KEY_SCOPES);

export async function insertAdminKey(db: Db, key: StoredAdminKey): Promise<void> {
  await db
    .insertInto('admin_keys')
    .values({
      key_id: key.keyId,
      name: key.name,
      scope: key.scope,
      profiles: key.profiles === null ? null : JSON.stringify(key.profiles),
      allow_list: key.allowList === null ? null : JSON.stringify(key.allowList),
      secret_hash: key.secretHash,
      created_at: key.createdAt,
      expires_at: key.expiresAt,
      lifetime: key.lifetime,
      revoked_at: key.revokedAt,
      replaced_by: key.replacedBy,
      lineage: key.lineage,
      last_used_at: key.lastUsedAt,
      last_used_address: key.lastUsedAddress,
    })
    .execute();
}

export async function findAdminKey(db: Db, keyId: string): Promise<StoredAdminKey | undefined> {
  const row = await db.selectFrom('admin_keys').selectAll().where('key_id', '=', keyId).executeTakeFirst();
  return row === undefined ? undefined : toKey(row);
}

/**
 * The key by id, share-locked until the transaction ends on PostgreSQL (SQLite runs one writing
 * transaction at a time): a revocation of it waits for the change that read it as live.
 */
export async function lockAdminKeyForShare(db: Db, keyId: string): Promise<StoredAdminKey | undefined> {
  const row = await db
    .selectFrom('admin_keys')
    .selectAll()
    .where('key_id', '=', keyId)
    .$if(isPostgres(db), (query) => query.forShare())
    .executeTakeFirst();
  return row === undefined ? undefined : toKey(row);
}

/** The key of this name that is neither revoked nor rotated out (expired or not). */
export async function currentAdminKey(db: Db, name: string): Promise<StoredAdminKey | undefined> {
  const row = await db
    .selectFrom('admin_keys')
    .selectAll()
    .where('name', '=', name)
    .where('revoked_at', 'is', null)
    .where('replaced_by', 'is', null)
    .executeTakeFirst();
  return row === undefined ? undefined : toKey(row);
}

/** Every key, by name, newest first within a name. */
export async function listAdminKeys(db: Db): Promise<StoredAdminKey[]> {
  const rows = await db
    .selectFrom('admin_keys')
    .selectAll()
    .orderBy('name')
    .orderBy('created_at', 'desc')
    .orderBy('key_id')
    .execute();
  return rows.map(toKey);
}

/** Revokes every key of this name not revoked yet (the current one and those in a rotation's grace period). */
/**
 * The keys of the name not revoked yet, locked until the transaction ends on PostgreSQL (SQLite
 * runs one writing transaction at a time): what a revocation checks is what it revokes.
 */
export async function lockLiveAdminKeysNamed(db: Db, name: string): Promise<StoredAdminKey[]> {
  const rows = await db
    .selectFrom('admin_keys')
    .selectAll()
    .where('name', '=', name)
    .where('revoked_at', 'is', null)
    .$if(isPostgres(db), (query) => query.forUpdate())
    .execute();
  return rows.map(toKey);
}

/** Revokes these keys (by id); a key made since under the same name is not among them. */
export async function revokeAdminKeys(db: Db, keyIds: readonly string[], at: string): Promise<number> {
  if (keyIds.length === 0) return 0;
  const result = await db
    .updateTable('admin_keys')
    .set({ revoked_at: at })
    .where('key_id', 'in', [...keyIds])
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Marks a key as rotated out: it stays valid until `expiresAt`, the end of its grace period. */
export async function markAdminKeyReplaced(
  db: Db,
  keyId: string,
  replacedBy: string,
  expiresAt: string,
): Promise<boolean> {
  const result = await db
    .updateTable('admin_keys')
    .set({ replaced_by: replacedBy, expires_at: expiresAt })
    .where('key_id', '=', keyId)
    .where('replaced_by', 'is', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Notes that a key was used, unless that was noted after `notBefore` already: a key used by
 * many requests costs one write per interval, also with several portal instances. A use noted
 * after `at` (the wall clock was set back since) is replaced: else it would stand until the
 * clock caught up.
 */
export async function noteAdminKeyUse(
  db: Db,
  keyId: string,
  at: string,
  address: string,
  notBefore: string,
): Promise<boolean> {
  const result = await db
    .updateTable('admin_keys')
    .set({ last_used_at: at, last_used_address: address })
    .where('key_id', '=', keyId)
    .where((where) =>
      where.or([
        where('last_used_at', 'is', null),
        where('last_used_at', '<', notBefore),
        where('last_used_at', '>', at),
      ]),
    )
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

function toKey(row: AdminKeysTable): StoredAdminKey {
  return {
    keyId: row.key_id,
    name: row.name,
    scope: scopeSchema.parse(row.scope),
    profiles: row.profiles === null ? null : stringList.parse(JSON.parse(row.profiles)).map(asProfileId),
    allowList: row.allow_list === null ? null : stringList.parse(JSON.parse(row.allow_list)),
    secretHash: row.secret_hash,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    lifetime: row.lifetime,
    revokedAt: row.revoked_at,
    replacedBy: row.replaced_by,
    lineage: row.lineage,
    lastUsedAt: row.last_used_at,
    lastUsedAddress: row.last_used_address,
  };
}
