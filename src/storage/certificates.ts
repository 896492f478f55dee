// Queries on `certificates`: one row per OpenVPN configuration, keyed by the client
// certificate's Common Name (the configuration's connection_id).
import type { ConnectionId, DeviceId, NodeNumber, ProfileId, UserId } from '../shared/ids.js';
import type { Selectable, Transaction } from 'kysely';
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import { dueForExpiryWarning, type ExpiryWarningWindow } from './expiry-change.js';
import { isPostgres, type Db } from './database.js';
import type { CertificatesTable, Database } from './schema.js';
import { CERTIFICATE_ROWS, remainingPagesOfUser } from './user-pages.js';

export interface OpenVpnCertificate {
  readonly commonName: ConnectionId;
  readonly userId: UserId;
  readonly profileId: ProfileId;
  readonly nodeNumber: NodeNumber;
  readonly displayName: string;
  readonly createdAt: string;
  readonly expiresAt: string;
  readonly authKey: string | null;
  /** Base64 of the DER SubjectPublicKeyInfo of the device's own key (its CSR); null: the portal made the key. */
  readonly publicKey: string | null;
  /** Whether `configuration.expiring` was announced, or is not wanted (src/core/expiry/warnings.ts). */
  readonly expiryWarned: boolean;
}

/** The row of a configuration, as both an issue and the eduVPN import write it. */
function certificateRow(certificate: OpenVpnCertificate) {
  return {
    common_name: certificate.commonName,
    user_id: certificate.userId,
    profile_id: certificate.profileId,
    node_number: certificate.nodeNumber,
    display_name: certificate.displayName,
    created_at: certificate.createdAt,
    expires_at: certificate.expiresAt,
    auth_key: certificate.authKey,
    public_key: certificate.publicKey,
    expiry_warned: certificate.expiryWarned ? 1 : 0,
  };
}

export async function insertCertificate(db: Db, certificate: OpenVpnCertificate): Promise<void> {
  await db.insertInto('certificates').values(certificateRow(certificate)).execute();
}

export async function findCertificate(db: Db, commonName: string): Promise<OpenVpnCertificate | undefined> {
  const row = await db.selectFrom('certificates').selectAll().where('common_name', '=', commonName).executeTakeFirst();
  return row === undefined ? undefined : toCertificate(row);
}

/** The OpenVPN configurations issued to a device. */
export async function certificatesOfDevice(db: Db, deviceId: DeviceId): Promise<OpenVpnCertificate[]> {
  const rows = await db
    .selectFrom('certificates')
    .selectAll()
    .where('device_id', '=', deviceId)
    .orderBy('expires_at', 'desc')
    .orderBy('common_name')
    .execute();
  return rows.map(toCertificate);
}

export async function certificatesOfUser(db: Db, userId: UserId): Promise<OpenVpnCertificate[]> {
  const rows = await db
    .selectFrom('certificates')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('expires_at', 'desc')
    .orderBy('common_name')
    .execute();
  return certificatesOf(rows);
}

/** Certificates from rows read elsewhere (src/storage/user-access.ts), in the order they come. */
export function certificatesOf(rows: readonly Selectable<CertificatesTable>[]): OpenVpnCertificate[] {
  return rows.map(toCertificate);
}

export async function findCertificateOfUser(
  db: Db,
  userId: UserId,
  commonName: ConnectionId,
): Promise<OpenVpnCertificate | undefined> {
  const row = await db
    .selectFrom('certificates')
    .selectAll()
    .where('common_name', '=', commonName)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row === undefined ? undefined : toCertificate(row);
}

/** False when it was not there (another portal instance deleted it first); with `expiredBy`, as deletePeer's. */
export async function deleteCertificate(db: Db, commonName: ConnectionId, expiredBy?: string): Promise<boolean> {
  let query = db.deleteFrom('certificates').where('common_name', '=', commonName);
  if (expiredBy !== undefined) query = query.where('expires_at', '<=', expiredBy);
  const result = await query.executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** As peersDueForExpiryWarning. */
export async function certificatesDueForExpiryWarning(
  db: Db,
  window: ExpiryWarningWindow,
  limit: number,
): Promise<OpenVpnCertificate[]> {
  return (await dueForExpiryWarning(db, 'certificates', window, limit)).map(toCertificate);
}

/** Deletes every OpenVPN configuration of a user and returns exactly the ones this call deleted. */
export async function deleteCertificatesOfUser(db: Db, userId: UserId): Promise<OpenVpnCertificate[]> {
  if (!isPostgres(db))
    return (await db.deleteFrom('certificates').where('user_id', '=', userId).returningAll().execute()).map(
      toCertificate,
    );
  // On PostgreSQL by pages of names (src/storage/user-pages.ts).
  return certificatesOf(
    await remainingPagesOfUser<Selectable<CertificatesTable>>(db, CERTIFICATE_ROWS, userId, null, 'delete'),
  );
}

/** As deletePeersOfDevice. */
export async function deleteCertificatesOfDevice(
  db: Db,
  deviceId: DeviceId,
  profileId?: ProfileId,
): Promise<OpenVpnCertificate[]> {
  let query = db.deleteFrom('certificates').where('device_id', '=', deviceId);
  if (profileId !== undefined) query = query.where('profile_id', '=', profileId);
  return (await query.returningAll().execute()).map(toCertificate);
}

/** Names the device a certificate was issued to, in the transaction that stores it (a WireGuard configuration is inserted with its device). */
export async function bindCertificateToDevice(db: Db, commonName: string, deviceId: DeviceId): Promise<void> {
  await db.updateTable('certificates').set({ device_id: deviceId }).where('common_name', '=', commonName).execute();
}

/** Configurations whose clients may be connected: user enabled, device not suspended, not expired; optionally only these names. */
export async function activeCertificates(
  db: Db,
  filter: { now: string; nodeNumber?: NodeNumber; commonNames?: readonly string[] },
): Promise<OpenVpnCertificate[]> {
  let query = db
    .selectFrom('certificates')
    .innerJoin('users', 'users.user_id', 'certificates.user_id')
    .selectAll('certificates')
    .where('users.is_disabled', '=', 0)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('devices')
            .select('devices.device_id')
            .whereRef('devices.device_id', '=', 'certificates.device_id')
            .where('devices.state', '=', 'suspended'),
        ),
      ),
    )
    .where('certificates.expires_at', '>', filter.now);
  if (filter.nodeNumber !== undefined) query = query.where('certificates.node_number', '=', filter.nodeNumber);
  if (filter.commonNames !== undefined) {
    if (filter.commonNames.length === 0) return [];
    query = query.where('certificates.common_name', 'in', filter.commonNames);
  }
  const rows = await query.orderBy('certificates.created_at').orderBy('certificates.common_name').execute();
  return rows.map(toCertificate);
}

/** Whether any configuration, of any profile, is on the node (the node's index). */
export async function hasCertificateOnNode(db: Db, nodeNumber: NodeNumber): Promise<boolean> {
  return (await certificateOnNodeQuery(db, nodeNumber).executeTakeFirst()) !== undefined;
}

export function certificateOnNodeQuery(db: Db, nodeNumber: NodeNumber) {
  return db.selectFrom('certificates').select('node_number').where('node_number', '=', nodeNumber).limit(1);
}

/** The earliest expiry of any OpenVPN configuration (expired ones included), or null when there is none. */
export async function earliestCertificateExpiry(db: Db): Promise<string | null> {
  const row = await db
    .selectFrom('certificates')
    .select((eb) => eb.fn.min('expires_at').as('earliest'))
    .executeTakeFirst();
  return row?.earliest ?? null;
}

/** Expired configurations, oldest first, at most `limit` of them. */
export async function expiredCertificates(db: Db, now: string, limit: number): Promise<OpenVpnCertificate[]> {
  const rows = await db
    .selectFrom('certificates')
    .selectAll()
    .where('expires_at', '<=', now)
    .orderBy('expires_at')
    .limit(limit)
    .execute();
  return rows.map(toCertificate);
}

function toCertificate(row: Selectable<CertificatesTable>): OpenVpnCertificate {
  return {
    commonName: row.common_name as ConnectionId,
    userId: row.user_id as UserId,
    profileId: row.profile_id as ProfileId,
    nodeNumber: row.node_number as NodeNumber,
    displayName: row.display_name,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    authKey: row.auth_key,
    publicKey: row.public_key,
    expiryWarned: row.expiry_warned !== 0,
  };
}

/** OpenVPN configurations per profile and node (metrics). */
export async function countCertificatesByProfileAndNode(
  db: Db,
): Promise<{ profileId: string; nodeNumber: number; count: number }[]> {
  const rows = await certificateCountsQuery(db).execute();
  return rows.map((row) => ({ profileId: row.profile_id, nodeNumber: row.node_number, count: Number(row.count) }));
}

/** The statement of countCertificatesByProfileAndNode: in the order of the index by (node, profile), which it reads alone. */
export function certificateCountsQuery(db: Db) {
  return db
    .selectFrom('certificates')
    .select(['node_number', 'profile_id', (eb) => eb.fn.countAll<number | string>().as('count')])
    .groupBy(['node_number', 'profile_id']);
}

/** Rows of one multi-row insert or look-up: well inside both databases' limits on parameters. */
const IMPORT_ROWS = 500;

/** The stored configurations among these common names. */
export async function certificatesWithNames(db: Db, commonNames: readonly string[]): Promise<OpenVpnCertificate[]> {
  const found: OpenVpnCertificate[] = [];
  for (const names of sizeLimitedGroups(commonNames, () => 1, IMPORT_ROWS)) {
    const rows = await db.selectFrom('certificates').selectAll().where('common_name', 'in', names).execute();
    found.push(...rows.map(toCertificate));
  }
  return found;
}

/**
 * Inserts configurations brought from another server (the eduVPN import), many per statement;
 * one whose common name is stored already is skipped. Answers how many it inserted.
 */
export async function insertImportedCertificates(
  trx: Transaction<Database>,
  certificates: readonly OpenVpnCertificate[],
): Promise<number> {
  let inserted = 0;
  for (const group of sizeLimitedGroups(certificates, () => 1, IMPORT_ROWS)) {
    const result = await trx
      .insertInto('certificates')
      .values(group.map(certificateRow))
      .onConflict((conflict) => conflict.column('common_name').doNothing())
      .executeTakeFirst();
    inserted += Number(result.numInsertedOrUpdatedRows ?? 0n);
  }
  return inserted;
}
