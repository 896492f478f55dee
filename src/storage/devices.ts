// Queries on `devices`: the managed devices the portal registered (src/core/devices/devices.ts). A
// device's configurations are the rows of wg_peers and certificates that name it; its serial
// and mdm_id are unique among devices that are not retired (partial unique indexes).
import { sql, type ExpressionBuilder, type Selectable } from 'kysely';
import { z } from 'zod';
import { asDeviceId, asProfileId, asUserId, type DeviceId, type ProfileId, type UserId } from '../shared/ids.js';
import type { DeviceState } from '../shared/device-states.js';
import type { Platform } from '../shared/platforms.js';
import type { Db } from './database.js';
import { isUniqueViolation } from './errors.js';
import { lockForTransaction } from './exclusive.js';
import type { Database, DevicesTable } from './schema.js';
import { listIn } from '../shared/list-in.js';

export type { DeviceState } from '../shared/device-states.js';
export type DeviceIdentity = 'token' | 'certificate';

/** The certificate a device proved itself with (mutual-TLS enrollment). */
export interface DeviceCertificate {
  readonly subject: string;
  readonly issuer: string;
  readonly serialNumber: string;
  readonly notAfter: string;
  /** SHA-256 (hex, of the DER) of the CA certificate that issued it; null when not known (bound before it was kept). */
  readonly issuerFingerprint: string | null;
}

export interface StoredDevice {
  readonly deviceId: DeviceId;
  readonly userId: UserId;
  readonly profileId: ProfileId;
  readonly platform: Platform;
  readonly serial: string | null;
  readonly mdmId: string | null;
  readonly identity: DeviceIdentity;
  /** Set when identity is `certificate`. */
  readonly certificate: DeviceCertificate | null;
  readonly state: DeviceState;
  readonly createdAt: string;
  readonly retiredAt: string | null;
  readonly lastSeenAt: string | null;
  /** Set while the state is `suspended`. */
  readonly suspension: StandingSuspension | null;
}

/** Why a device is suspended, since when (ATOM) and by whom (an admin key's name, `mdm`, `(portal)`, …). */
export interface DeviceSuspension {
  readonly reason: string;
  readonly since: string;
  readonly by: string;
}

/** A suspended device's suspension as its row shows it, with the others that still stand. */
export interface StandingSuspension extends DeviceSuspension {
  /** The other reasons it stays suspended for, each with its own time and author, oldest first. */
  readonly others: readonly DeviceSuspension[];
}

const otherSuspensionsSchema = z.array(z.object({ reason: z.string(), since: z.string(), by: z.string() }));

/** One configuration of a device, as its record lists it. */
export interface DeviceConfiguration {
  readonly connectionId: string;
  readonly profileId: ProfileId;
  readonly vpnProto: 'wireguard' | 'openvpn';
  readonly expiresAt: string;
}

export interface DeviceFilter {
  readonly userId?: UserId;
  /** The profiles a limited key may see; null or absent: every profile. */
  readonly profiles?: readonly ProfileId[] | null;
  readonly profileId?: ProfileId;
  readonly platform?: Platform;
  readonly state?: DeviceState;
  readonly identity?: DeviceIdentity;
  readonly serial?: string;
  readonly mdmId?: string;
  /** ATOM: devices last seen before it, or never seen and registered before it. */
  readonly lastSeenBefore?: string;
  /** Devices with an id below this one (the cursor: the last id of the page before). */
  readonly before?: DeviceId;
  readonly limit: number;
}

export async function insertDevice(db: Db, device: StoredDevice): Promise<void> {
  await db
    .insertInto('devices')
    .values({
      device_id: device.deviceId,
      user_id: device.userId,
      profile_id: device.profileId,
      platform: device.platform,
      serial: device.serial,
      mdm_id: device.mdmId,
      identity: device.identity,
      certificate_subject: device.certificate?.subject ?? null,
      certificate_issuer: device.certificate?.issuer ?? null,
      certificate_serial: device.certificate?.serialNumber ?? null,
      certificate_not_after: device.certificate?.notAfter ?? null,
      certificate_issuer_fingerprint: device.certificate?.issuerFingerprint ?? null,
      state: device.state,
      created_at: device.createdAt,
      retired_at: device.retiredAt,
      last_seen_at: device.lastSeenAt,
      suspended_reason: device.suspension?.reason ?? null,
      suspended_at: device.suspension?.since ?? null,
      suspended_by: device.suspension?.by ?? null,
      other_suspensions: otherSuspensionsText(device.suspension?.others ?? []),
    })
    .execute();
}

export async function findDevice(db: Db, deviceId: DeviceId): Promise<StoredDevice | undefined> {
  const row = await db.selectFrom('devices').selectAll().where('device_id', '=', deviceId).executeTakeFirst();
  return row === undefined ? undefined : toDevice(row);
}

/** The device that is not retired with this serial (or mdm_id). */
export async function findLiveDevice(
  db: Db,
  by: 'serial' | 'mdm_id',
  value: string,
): Promise<StoredDevice | undefined> {
  const row = await liveDeviceQuery(db, by, value).executeTakeFirst();
  return row === undefined ? undefined : toDevice(row);
}

/** At most this many live devices are read whose identifier differs from another only in letter case. */
const ANY_CASE_LIMIT = 16;

/**
 * The live devices with this serial (or mdm_id), letter case aside: the one that has it as
 * written, else every one whose identifier differs only in case (an MDM names a UDID in capitals
 * that another tool registered in small letters). More than one only when devices were registered
 * with identifiers that differ only in case (the unique indexes compare bytes): the caller
 * decides what an ambiguous name may do. Identifiers are printable ASCII, so both databases and
 * JavaScript lower-case them alike. Reads the unique index, then the lower-cased one of 0063.
 */
export async function findLiveDevicesAnyCase(db: Db, by: 'serial' | 'mdm_id', value: string): Promise<StoredDevice[]> {
  const exact = await findLiveDevice(db, by, value);
  if (exact !== undefined) return [exact];
  const rows = await liveDevicesAnyCaseQuery(db, by, value).execute();
  return rows.map(toDevice);
}

/**
 * Holds, until the transaction ends, every registration of a live device's serial and mdm_id
 * that equal these letter case aside (PostgreSQL; SQLite's write transactions run one at a time
 * anyway): the unique indexes compare bytes, so two transactions that each found no live device
 * with `8a1b…` in any case would otherwise both write theirs, one as `8A1B…`. The serial is taken
 * before the mdm_id, in every transaction alike, so two never deadlock over them.
 */
export async function lockDeviceIdentifiers(
  db: Db,
  identifiers: { readonly serial: string | null; readonly mdmId: string | null },
): Promise<void> {
  if (identifiers.serial !== null) await lockForTransaction(db, `device-serial:${identifiers.serial.toLowerCase()}`);
  if (identifiers.mdmId !== null) await lockForTransaction(db, `device-mdm_id:${identifiers.mdmId.toLowerCase()}`);
}

/** The query of findLiveDevicesAnyCase past the exact match (its plan is tested). */
export function liveDevicesAnyCaseQuery(db: Db, by: 'serial' | 'mdm_id', value: string) {
  return db
    .selectFrom('devices')
    .selectAll()
    .where(sql<string>`lower(${sql.ref(by)})`, '=', value.toLowerCase())
    .where('state', '<>', 'retired')
    .where(by, 'is not', null)
    .orderBy('device_id')
    .limit(ANY_CASE_LIMIT);
}

/** The retired devices named by this serial (or mdm_id): where each look-up of a retired device starts. */
function retiredDevicesNamed(db: Db, by: 'serial' | 'mdm_id', value: string) {
  return db.selectFrom('devices').selectAll().where(by, '=', value).where('state', '=', 'retired');
}

/**
 * A retired device named by this serial (or mdm_id) that proved itself with this very
 * certificate: the one it was bound to last (its issuer's name and serial number, as stored), or
 * one it enrolled with before (its history's `certificate SERIAL`); undefined when there is none.
 */
export async function findRetiredDeviceOfCertificate(
  db: Db,
  by: 'serial' | 'mdm_id',
  value: string,
  certificate: { readonly issuer: string; readonly serialNumber: string },
): Promise<StoredDevice | undefined> {
  const row = await retiredDevicesNamed(db, by, value)
    .where((eb) =>
      eb.or([
        eb.and([
          eb('certificate_issuer', '=', certificate.issuer),
          eb('certificate_serial', '=', certificate.serialNumber),
        ]),
        eb.exists(
          eb
            .selectFrom('device_history')
            .select('device_history.device_id')
            .whereRef('device_history.device_id', '=', 'devices.device_id')
            .where('device_history.change', '=', 'enrolled')
            .where('device_history.reason', '=', `certificate ${certificate.serialNumber}`),
        ),
      ]),
    )
    .executeTakeFirst();
  return row === undefined ? undefined : toDevice(row);
}

/**
 * The retired device of this user named by this serial (or mdm_id), whatever certificate it
 * held: the one retired last; undefined when there is none. An MDM renews a device's certificate
 * (a new serial number, the same device id), so the certificate alone does not recognise it.
 */
export async function findRetiredDeviceOfUser(
  db: Db,
  by: 'serial' | 'mdm_id',
  value: string,
  userId: UserId,
): Promise<StoredDevice | undefined> {
  const row = await retiredDevicesNamed(db, by, value)
    .where('user_id', '=', userId)
    .orderBy('retired_at', 'desc')
    .orderBy('device_id', 'desc')
    .executeTakeFirst();
  return row === undefined ? undefined : toDevice(row);
}

/**
 * The query of findLiveDevice (its plan is tested: every enrollment and every MDM push asks it,
 * and it reads the unique index of live devices' serials, or MDM ids).
 */
export function liveDeviceQuery(db: Db, by: 'serial' | 'mdm_id', value: string) {
  return db.selectFrom('devices').selectAll().where(by, '=', value).where('state', '<>', 'retired');
}

/**
 * Locks a device's row for the rest of the transaction (a concurrent issue or retirement for it
 * waits) and returns it as it is now; undefined when there is none.
 */
export async function lockDevice(db: Db, deviceId: DeviceId): Promise<StoredDevice | undefined> {
  const row = await db
    .updateTable('devices')
    .set({ state: sql<string>`state` })
    .where('device_id', '=', deviceId)
    .returningAll()
    .executeTakeFirst();
  return row === undefined ? undefined : toDevice(row);
}

/** A device that got a configuration: `registered` becomes `active` (a retired one stays retired). */
export async function markDeviceActive(db: Db, deviceId: DeviceId): Promise<void> {
  await db
    .updateTable('devices')
    .set({ state: 'active' })
    .where('device_id', '=', deviceId)
    .where('state', '=', 'registered')
    .execute();
}

/** The device proved itself with this certificate: it is bound to it (identity `certificate`). */
export async function bindDeviceCertificate(db: Db, deviceId: DeviceId, certificate: DeviceCertificate): Promise<void> {
  await db
    .updateTable('devices')
    .set({
      identity: 'certificate',
      certificate_subject: certificate.subject,
      certificate_issuer: certificate.issuer,
      certificate_serial: certificate.serialNumber,
      certificate_not_after: certificate.notAfter,
      certificate_issuer_fingerprint: certificate.issuerFingerprint,
    })
    .where('device_id', '=', deviceId)
    .execute();
}

/** Suspends a device that is registered or active; false when it was not. */
export async function suspendStoredDevice(db: Db, deviceId: DeviceId, suspension: DeviceSuspension): Promise<boolean> {
  const result = await db
    .updateTable('devices')
    .set({
      state: 'suspended',
      suspended_reason: suspension.reason,
      suspended_at: suspension.since,
      suspended_by: suspension.by,
      other_suspensions: null,
    })
    .where('device_id', '=', deviceId)
    .where('state', 'in', ['registered', 'active'])
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * A suspended device's suspensions as they stand now (one taken over, a reason added or ended,
 * another shown); the state stays `suspended`. False when it is not suspended.
 */
export async function replaceSuspension(db: Db, deviceId: DeviceId, suspension: StandingSuspension): Promise<boolean> {
  const result = await db
    .updateTable('devices')
    .set({
      suspended_reason: suspension.reason,
      suspended_at: suspension.since,
      suspended_by: suspension.by,
      other_suspensions: otherSuspensionsText(suspension.others),
    })
    .where('device_id', '=', deviceId)
    .where('state', '=', 'suspended')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Ends a device's suspension, back to the state it interrupted; false when it was not suspended. */
export async function resumeStoredDevice(db: Db, deviceId: DeviceId, state: 'registered' | 'active'): Promise<boolean> {
  const result = await db
    .updateTable('devices')
    .set({ state, suspended_reason: null, suspended_at: null, suspended_by: null, other_suspensions: null })
    .where('device_id', '=', deviceId)
    .where('state', '=', 'suspended')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Records that a Jamf Pro group event of this time (ISO 8601 with milliseconds) is applied to the
 * device; false, and nothing written, when a newer one was applied already, or, unless
 * `sameTimeToo`, one of the same time. A suspension claims the time of an event applied already
 * (a "joined" made in the same millisecond, whose order Jamf Pro's time cannot tell; its own
 * event sent again after it was partly applied), a resume only a later one: of two changes of
 * one moment, the suspension stands. A recorded time after `notAfter` (ahead of the portal's
 * clock: Jamf Pro's clock was wrong) orders nothing, or one event so dated would make every
 * later one look older. For the transaction that has the device's row locked, so that the event
 * applied is the one recorded.
 */
export async function claimJamfEvent(
  db: Db,
  deviceId: DeviceId,
  at: string,
  notAfter: string,
  sameTimeToo: boolean,
): Promise<boolean> {
  const result = await db
    .updateTable('devices')
    .set({ jamf_event_at: at })
    .where('device_id', '=', deviceId)
    .where((eb) =>
      eb.or([
        eb('jamf_event_at', 'is', null),
        eb('jamf_event_at', sameTimeToo ? '<=' : '<', at),
        eb('jamf_event_at', '>', notAfter),
      ]),
    )
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Gives a live device the serial or mdm_id it lacks; false when it has one already, is retired,
 * or another live device holds the value in any letter case (they are unique among live devices,
 * and an MDM names them in either case: as registration refuses such a twin, so does this).
 * Takes the lock registrations take on the value, so neither writes a twin meanwhile. Not for a
 * transaction: it runs its own.
 */
export async function fillDeviceIdentifier(
  db: Db,
  deviceId: DeviceId,
  column: 'serial' | 'mdm_id',
  value: string,
): Promise<boolean> {
  try {
    return await db.transaction().execute(async (trx) => {
      await lockDeviceIdentifiers(
        trx,
        column === 'serial' ? { serial: value, mdmId: null } : { serial: null, mdmId: value },
      );
      if ((await findLiveDevicesAnyCase(trx, column, value)).length > 0) return false;
      const result = await trx
        .updateTable('devices')
        .set(column === 'serial' ? { serial: value } : { mdm_id: value })
        .where('device_id', '=', deviceId)
        .where(column, 'is', null)
        .where('state', '<>', 'retired')
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    });
  } catch (error) {
    // Another device took the value between the look and the write by a path that takes no
    // lock: the unique index of live devices refused this one, as the look would have.
    if (isUniqueViolation(error)) return false;
    throw error;
  }
}

/**
 * Suspended devices by each reason they stand suspended for (metrics): a device suspended as
 * noncompliant and outside the Jamf Pro group counts under both.
 */
export async function countSuspendedDevices(db: Db): Promise<{ reason: string; count: number }[]> {
  const rows = await db
    .selectFrom('devices')
    .select(['suspended_reason', 'other_suspensions', (eb) => eb.fn.countAll<number | string>().as('count')])
    .where('state', '=', 'suspended')
    .groupBy(['suspended_reason', 'other_suspensions'])
    .execute();
  return rows.flatMap((row) => {
    const others =
      row.other_suspensions === null ? [] : otherSuspensionsSchema.parse(JSON.parse(row.other_suspensions));
    return [row.suspended_reason ?? '', ...others.map((other) => other.reason)].map((reason) => ({
      reason,
      count: Number(row.count),
    }));
  });
}

/** Retires a device that is not retired yet (a suspension ends with it); false when it already was. */
export async function retireStoredDevice(db: Db, deviceId: DeviceId, at: string): Promise<boolean> {
  const result = await db
    .updateTable('devices')
    .set({
      state: 'retired',
      retired_at: at,
      suspended_reason: null,
      suspended_at: null,
      suspended_by: null,
      other_suspensions: null,
    })
    .where('device_id', '=', deviceId)
    .where('state', '<>', 'retired')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Live devices bound to a certificate whose serial number is one of these (each given in hex as
 * the certificate stores it, or with a leading 00 byte) and that a CA certificate whose key signed
 * the list issued: by that CA certificate's fingerprint (`signers`), so that a CA of the same
 * name under another key (one renewed under its name) is not taken for it, and, for devices bound
 * before the fingerprint was kept (migration 0048), by the issuer's name (`issuer`), since nothing
 * else tells which CA of that name vouched for them.
 */
export async function liveDevicesWithCertificates(
  db: Db,
  issuers: { readonly issuer: string; readonly signers: readonly string[] },
  serialNumbers: readonly string[],
): Promise<StoredDevice[]> {
  if (serialNumbers.length === 0) return [];
  return (await liveDevicesWithCertificatesQuery(db, issuers, serialNumbers).execute()).map(toDevice);
}

/**
 * The query of liveDevicesWithCertificates (its plan is tested: one refresh of a large list runs
 * it hundreds of times, and it reads the live certificates' index by serial).
 */
export function liveDevicesWithCertificatesQuery(
  db: Db,
  { issuer, signers }: { readonly issuer: string; readonly signers: readonly string[] },
  serialNumbers: readonly string[],
) {
  return liveCertificateDevices(db)
    .where('certificate_serial', 'in', serialNumbers)
    .where((eb) => {
      const unknownCa = eb.and([
        eb('certificate_issuer_fingerprint', 'is', null),
        eb('certificate_issuer', '=', issuer),
      ]);
      return signers.length === 0
        ? unknownCa
        : eb.or([eb('certificate_issuer_fingerprint', 'in', [...signers]), unknownCa]);
    });
}

/** A CA certificate as the devices' rows name it: by SHA-256 fingerprint, and by subject for rows from before 0048. */
export interface IssuingCa {
  readonly fingerprint: string;
  readonly subject: string;
}

/**
 * Live devices bound to a certificate that one of these CA certificates issued: by the issuer's
 * fingerprint, and, for devices bound before the fingerprint was kept (migration 0048), by the
 * issuer's name, since nothing else tells which CA of that name vouched for them.
 */
export async function liveDevicesIssuedBy(db: Db, cas: readonly IssuingCa[]): Promise<StoredDevice[]> {
  if (cas.length === 0) return [];
  return (await liveDevicesIssuedByQuery(db, cas).execute()).map(toDevice);
}

/**
 * The query of liveDevicesIssuedBy (its plan is tested): each of its two ways of naming the
 * issuer says on its own that the device is live and bound to a certificate, where SQLite sees
 * that the partial index of migration 0054 holds the rows of each (of a condition around them
 * both, it does not), and reads the index twice rather than every device.
 */
export function liveDevicesIssuedByQuery(db: Db, cas: readonly IssuingCa[]) {
  return db
    .selectFrom('devices')
    .selectAll()
    .where((eb) =>
      eb.or([
        eb.and([
          ...liveCertificate(eb),
          eb(
            'certificate_issuer_fingerprint',
            'in',
            cas.map((ca) => ca.fingerprint),
          ),
        ]),
        eb.and([
          ...liveCertificate(eb),
          eb('certificate_issuer_fingerprint', 'is', null),
          eb('certificate_issuer', 'in', [...new Set(cas.map((ca) => ca.subject))]),
        ]),
      ]),
    );
}

/** Devices bound to a certificate and not retired: what a revocation list may retire. */
function liveCertificateDevices(db: Db) {
  return db
    .selectFrom('devices')
    .selectAll()
    .where((eb) => eb.and(liveCertificate(eb)));
}

/**
 * That a device is bound to a certificate and not retired, written into the statement as
 * literals, as the partial indexes of migration 0054 have it, where both planners see that they
 * match.
 */
function liveCertificate(eb: ExpressionBuilder<Database, 'devices'>) {
  return [eb('identity', '=', sql.lit('certificate')), eb('state', '<>', sql.lit('retired'))];
}

/** The profiles of a user's devices, retired ones too (their rows stay until the user is destroyed). */
export async function deviceProfilesOfUser(db: Db, userId: UserId): Promise<ProfileId[]> {
  const rows = await db.selectFrom('devices').select('profile_id').distinct().where('user_id', '=', userId).execute();
  return rows.map((row) => asProfileId(row.profile_id));
}

/** A user's devices that are not retired. */
export async function liveDevicesOfUser(db: Db, userId: UserId): Promise<StoredDevice[]> {
  const rows = await db
    .selectFrom('devices')
    .selectAll()
    .where('user_id', '=', userId)
    .where('state', '<>', 'retired')
    .orderBy('device_id')
    .execute();
  return rows.map(toDevice);
}

/** The MDM identifiers of every live device, with its state, for comparing them with the MDM's inventory. */
export async function liveDeviceIdentifiers(
  db: Db,
): Promise<Pick<StoredDevice, 'deviceId' | 'userId' | 'serial' | 'mdmId' | 'createdAt' | 'state' | 'suspension'>[]> {
  const rows = await db
    .selectFrom('devices')
    .select([
      'device_id',
      'user_id',
      'serial',
      'mdm_id',
      'created_at',
      'state',
      'suspended_reason',
      'suspended_at',
      'suspended_by',
      'other_suspensions',
    ])
    .where('state', '<>', 'retired')
    .orderBy('device_id')
    .execute();
  return rows.map((row) => ({
    deviceId: asDeviceId(row.device_id),
    userId: asUserId(row.user_id),
    serial: row.serial,
    mdmId: row.mdm_id,
    createdAt: row.created_at,
    state: row.state as DeviceState,
    suspension: suspensionOf(row),
  }));
}

/** A session of one of the device's configurations started (wg_peers or certificates name it). */
export async function touchDeviceOfConfiguration(
  db: Db,
  vpnProto: 'wireguard' | 'openvpn',
  connectionId: string,
  at: string,
): Promise<void> {
  const owner =
    vpnProto === 'wireguard'
      ? db.selectFrom('wg_peers').select('device_id').where('public_key', '=', connectionId)
      : db.selectFrom('certificates').select('device_id').where('common_name', '=', connectionId);
  await db.updateTable('devices').set({ last_seen_at: at }).where('device_id', '=', owner).execute();
}

/** The device a configuration was issued to; null when none was, or the configuration is gone. */
export async function deviceIdOfConfiguration(
  db: Db,
  vpnProto: 'wireguard' | 'openvpn',
  connectionId: string,
): Promise<DeviceId | null> {
  const row =
    vpnProto === 'wireguard'
      ? await db.selectFrom('wg_peers').select('device_id').where('public_key', '=', connectionId).executeTakeFirst()
      : await db
          .selectFrom('certificates')
          .select('device_id')
          .where('common_name', '=', connectionId)
          .executeTakeFirst();
  return row?.device_id === null || row?.device_id === undefined ? null : asDeviceId(row.device_id);
}

/** Devices matching the filter, newest first (by id), at most `limit`. */
export async function listStoredDevices(db: Db, filter: DeviceFilter): Promise<StoredDevice[]> {
  if (filter.profiles !== undefined && filter.profiles !== null && filter.profiles.length === 0) return [];
  return (await devicesQuery(db, filter).execute()).map(toDevice);
}

/** The search of listStoredDevices, as a query (its plan is tested: each filter has an index). */
export function devicesQuery(db: Db, filter: DeviceFilter) {
  let query = db.selectFrom('devices').selectAll().orderBy('device_id', 'desc').limit(filter.limit);
  if (filter.profiles !== undefined && filter.profiles !== null)
    query = query.where('profile_id', 'in', filter.profiles);
  if (filter.userId !== undefined) query = query.where('user_id', '=', filter.userId);
  if (filter.profileId !== undefined) query = query.where('profile_id', '=', filter.profileId);
  if (filter.platform !== undefined) query = query.where('platform', '=', filter.platform);
  if (filter.state !== undefined) query = query.where('state', '=', filter.state);
  if (filter.identity !== undefined) query = query.where('identity', '=', filter.identity);
  if (filter.serial !== undefined) query = query.where('serial', '=', filter.serial);
  if (filter.mdmId !== undefined) query = query.where('mdm_id', '=', filter.mdmId);
  if (filter.before !== undefined) query = query.where('device_id', '<', filter.before);
  const before = filter.lastSeenBefore;
  if (before !== undefined) {
    query = query.where((where) =>
      where.or([
        where('last_seen_at', '<', before),
        where.and([where('last_seen_at', 'is', null), where('created_at', '<', before)]),
      ]),
    );
  }
  return query;
}

/** The device's configurations, both kinds, by profile. */
export async function configurationsOfDevice(db: Db, deviceId: DeviceId): Promise<DeviceConfiguration[]> {
  return (await configurationsOfDevices(db, [deviceId])).get(deviceId) ?? [];
}

/** The configurations of several devices (a page of the listing) in two queries, by device, each by profile. */
export async function configurationsOfDevices(
  db: Db,
  deviceIds: readonly DeviceId[],
): Promise<Map<DeviceId, DeviceConfiguration[]>> {
  const byDevice = new Map<DeviceId, DeviceConfiguration[]>();
  if (deviceIds.length === 0) return byDevice;
  const [peers, certificates] = await Promise.all([
    db
      .selectFrom('wg_peers')
      .select(['device_id', 'public_key as connection_id', 'profile_id', 'expires_at'])
      .where('device_id', 'in', deviceIds)
      .execute(),
    db
      .selectFrom('certificates')
      .select(['device_id', 'common_name as connection_id', 'profile_id', 'expires_at'])
      .where('device_id', 'in', deviceIds)
      .execute(),
  ]);
  const add = (rows: typeof peers, vpnProto: 'wireguard' | 'openvpn') => {
    for (const row of rows) {
      if (row.device_id === null) continue;
      const deviceId = asDeviceId(row.device_id);
      listIn(byDevice, deviceId).push({
        connectionId: row.connection_id,
        profileId: asProfileId(row.profile_id),
        vpnProto,
        expiresAt: row.expires_at,
      });
    }
  };
  add(peers, 'wireguard');
  add(certificates, 'openvpn');
  for (const list of byDevice.values())
    list.sort((a, b) => a.profileId.localeCompare(b.profileId) || a.connectionId.localeCompare(b.connectionId));
  return byDevice;
}

/** Devices by platform, state and identity (metrics). */
export async function countDevices(
  db: Db,
): Promise<{ platform: string; state: string; identity: string; count: number }[]> {
  const rows = await db
    .selectFrom('devices')
    .select(['platform', 'state', 'identity', (eb) => eb.fn.countAll<number | string>().as('count')])
    .groupBy(['platform', 'state', 'identity'])
    .execute();
  return rows.map((row) => ({
    platform: row.platform,
    state: row.state,
    identity: row.identity,
    count: Number(row.count),
  }));
}

function toDevice(row: Selectable<DevicesTable>): StoredDevice {
  const certificate =
    row.certificate_subject === null
      ? null
      : {
          subject: row.certificate_subject,
          issuer: row.certificate_issuer ?? '',
          serialNumber: row.certificate_serial ?? '',
          notAfter: row.certificate_not_after ?? '',
          issuerFingerprint: row.certificate_issuer_fingerprint,
        };
  return {
    deviceId: asDeviceId(row.device_id),
    userId: asUserId(row.user_id),
    profileId: asProfileId(row.profile_id),
    platform: row.platform as Platform,
    serial: row.serial,
    mdmId: row.mdm_id,
    identity: row.identity as DeviceIdentity,
    certificate,
    state: row.state as DeviceState,
    createdAt: row.created_at,
    retiredAt: row.retired_at,
    lastSeenAt: row.last_seen_at,
    suspension: suspensionOf(row),
  };
}

/** The suspension a row holds while its state is `suspended`. */
function suspensionOf(
  row: Pick<
    Selectable<DevicesTable>,
    'state' | 'suspended_reason' | 'suspended_at' | 'suspended_by' | 'other_suspensions'
  >,
): StandingSuspension | null {
  if (row.state !== 'suspended') return null;
  return {
    reason: row.suspended_reason ?? '',
    since: row.suspended_at ?? '',
    by: row.suspended_by ?? '',
    others: row.other_suspensions === null ? [] : otherSuspensionsSchema.parse(JSON.parse(row.other_suspensions)),
  };
}

/** The column's text: null when no other suspension stands. */
function otherSuspensionsText(others: readonly DeviceSuspension[]): string | null {
  return others.length === 0 ? null : JSON.stringify(others.map(({ reason, since, by }) => ({ reason, since, by })));
}

/** A configuration that still exists and the device it was issued to: whose it is and since when (ATOM). */
export interface ConfigurationDevice {
  readonly deviceId: DeviceId;
  readonly userId: string;
  readonly createdAt: string;
}

/** The devices of these configurations that still exist (WireGuard key or OpenVPN Common Name → device, user, creation). */
export async function devicesOfConfigurations(
  db: Db,
  connectionIds: readonly string[],
): Promise<Map<string, ConfigurationDevice>> {
  if (connectionIds.length === 0) return new Map();
  const [peers, certificates] = await Promise.all([
    db
      .selectFrom('wg_peers')
      .select(['public_key as connection_id', 'device_id', 'user_id', 'created_at'])
      .where('public_key', 'in', connectionIds)
      .where('device_id', 'is not', null)
      .execute(),
    db
      .selectFrom('certificates')
      .select(['common_name as connection_id', 'device_id', 'user_id', 'created_at'])
      .where('common_name', 'in', connectionIds)
      .where('device_id', 'is not', null)
      .execute(),
  ]);
  return new Map(
    [...peers, ...certificates].flatMap((row) =>
      row.device_id === null
        ? []
        : [
            [
              row.connection_id,
              { deviceId: asDeviceId(row.device_id), userId: row.user_id, createdAt: row.created_at },
            ] as const,
          ],
    ),
  );
}

/**
 * The device of a session's configuration, when the configuration that has the session's key now
 * is that session's own: of the session's user, and made by the second the session ended
 * (`endedAt`, ATOM; null: still open). A device's own WireGuard key may go to a new configuration
 * once the old one is gone (the device handed on, or enrolled again): its device is not the session's.
 */
export function deviceOfSession(
  configuration: ConfigurationDevice | undefined,
  session: { readonly userId: string; readonly endedAt: string | null },
): DeviceId | null {
  if (configuration === undefined || configuration.userId !== session.userId) return null;
  return session.endedAt === null || configuration.createdAt <= session.endedAt ? configuration.deviceId : null;
}

/**
 * The end (`notAfter`, ATOM) of the certificate that the device of a configuration is bound to
 * (identity `certificate`: it enrolled with it), or null when the configuration names no device,
 * or one that proved itself otherwise.
 */
export async function deviceCertificateEndOf(
  db: Db,
  table: 'wg_peers' | 'certificates',
  connectionId: string,
): Promise<string | null> {
  const row =
    table === 'wg_peers'
      ? await db
          .selectFrom('wg_peers')
          .innerJoin('devices', 'devices.device_id', 'wg_peers.device_id')
          .select('devices.certificate_not_after')
          .where('wg_peers.public_key', '=', connectionId)
          .where('devices.identity', '=', 'certificate')
          .executeTakeFirst()
      : await db
          .selectFrom('certificates')
          .innerJoin('devices', 'devices.device_id', 'certificates.device_id')
          .select('devices.certificate_not_after')
          .where('certificates.common_name', '=', connectionId)
          .where('devices.identity', '=', 'certificate')
          .executeTakeFirst();
  return row?.certificate_not_after ?? null;
}
