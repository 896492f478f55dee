// Queries on `wg_peers`: one row per WireGuard configuration.
import { sql, type Selectable, type Transaction } from 'kysely';
import type { ConnectionId, DeviceId, NodeNumber, ProfileId, UserId, WireGuardKey } from '../shared/ids.js';
import { sizeLimitedGroups } from '../shared/size-limited-groups.js';
import { isPostgres, type Db } from './database.js';
import { dueForExpiryWarning, type ExpiryWarningWindow } from './expiry-change.js';
import { advanceRevisionTo, nextRevision, revisionValue, toRevision, type Revision } from './revisions.js';
import { preparedQuery, type Slot } from './prepared-query.js';
import type { Database, WireGuardPeersTable } from './schema.js';
import { PEER_ROWS, remainingPagesOfUser } from './user-pages.js';

export interface WireGuardPeer {
  readonly publicKey: WireGuardKey;
  readonly userId: UserId;
  readonly profileId: ProfileId;
  readonly nodeNumber: NodeNumber;
  readonly displayName: string;
  readonly ipFour: string;
  readonly ipSix: string;
  readonly poolIndex: number;
  readonly createdAt: string;
  readonly expiresAt: string;
  readonly authKey: string | null;
  /** The change counter's value at the last change to whether this peer belongs on its node. */
  readonly revision: Revision;
  /** Whether `configuration.expiring` was announced, or is not wanted (src/core/expiry/warnings.ts). */
  readonly expiryWarned: boolean;
}

/** A configuration to insert: its revision is taken by the insert; `deviceId`: the device it is issued to. */
export type NewPeer = Omit<WireGuardPeer, 'revision'> & { readonly deviceId: DeviceId | null };

/**
 * Inserts a new configuration with a new revision, and returns it as stored; null when another
 * configuration holds its IPv4 address (one statement: no read before the write).
 */
export async function insertPeer(trx: Transaction<Database>, peer: NewPeer): Promise<WireGuardPeer | null> {
  // PostgreSQL takes the number inside the statement (nextval); SQLite's is taken first.
  const revision = isPostgres(trx) ? null : await nextRevision(trx);
  const [row] = (await insertPeerRow(trx, { ...peer, expiryWarned: peer.expiryWarned ? 1 : 0, revision })).rows;
  return row === undefined ? null : toPeer(row);
}

type PeerRow = Omit<NewPeer, 'expiryWarned'> & {
  readonly expiryWarned: number;
  readonly revision: Revision | null;
};

const insertPeerRow = preparedQuery((db, value: Slot<PeerRow>) =>
  db
    .insertInto('wg_peers')
    .values({
      public_key: value('publicKey'),
      user_id: value('userId'),
      profile_id: value('profileId'),
      node_number: value('nodeNumber'),
      display_name: value('displayName'),
      ip_four: value('ipFour'),
      ip_six: value('ipSix'),
      pool_index: value('poolIndex'),
      created_at: value('createdAt'),
      expires_at: value('expiresAt'),
      auth_key: value('authKey'),
      expiry_warned: value('expiryWarned'),
      device_id: value('deviceId'),
      revision: isPostgres(db) ? sql`nextval('change_revision')` : (value('revision') as Revision),
    })
    .onConflict((conflict) => conflict.column('ip_four').doNothing())
    .returningAll(),
);

/**
 * Gives every configuration of a user a new revision (disable, enable) and returns them.
 * Call after the user's row is locked by the same transaction.
 */
export async function stampPeersOfUser(trx: Transaction<Database>, userId: UserId): Promise<WireGuardPeer[]> {
  const rows = await trx
    .updateTable('wg_peers')
    .set({ revision: await revisionValue(trx) })
    .where('user_id', '=', userId)
    .returningAll()
    .execute();
  return userPeersOf(rows);
}

/** A user's configurations as stampPeersOfUser answers them, from rows read elsewhere. */
export function userPeersOf(rows: readonly Selectable<WireGuardPeersTable>[]): WireGuardPeer[] {
  return rows.map(toPeer).sort(byExpiryThenKey);
}

/**
 * Gives every configuration of a device a new revision (suspend, resume) and returns them.
 * Call after the device's row is locked by the same transaction.
 */
export async function stampPeersOfDevice(trx: Transaction<Database>, deviceId: DeviceId): Promise<WireGuardPeer[]> {
  const rows = await trx
    .updateTable('wg_peers')
    .set({ revision: await revisionValue(trx) })
    .where('device_id', '=', deviceId)
    .returningAll()
    .execute();
  return rows.map(toPeer).sort(byExpiryThenKey);
}

/**
 * Moves the counter past `revision`, the newest a node applied, and gives every configuration
 * on the node a new number above it; answers how many. The node's rows are locked first, so
 * that once the counter has moved (no rollback moves it back) nothing is left to wait for and
 * the new numbers are not lost to a deadlock.
 */
export async function catchUpWithNodeRevision(
  trx: Transaction<Database>,
  nodeNumber: NodeNumber,
  revision: Revision,
): Promise<number> {
  if (isPostgres(trx))
    await sql`SELECT count(*) FROM (SELECT 1 FROM wg_peers WHERE node_number = ${nodeNumber} FOR UPDATE) AS locked`.execute(
      trx,
    );
  await advanceRevisionTo(trx, revision);
  const result = await trx
    .updateTable('wg_peers')
    .set({ revision: await revisionValue(trx) })
    .where('node_number', '=', nodeNumber)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The stored configurations among these keys, whatever their state. */
export async function peersWithKeys(db: Db, publicKeys: readonly string[]): Promise<WireGuardPeer[]> {
  if (publicKeys.length === 0) return [];
  const rows = await db.selectFrom('wg_peers').selectAll().where('public_key', 'in', publicKeys).execute();
  return rows.map(toPeer);
}

export async function peersOfUser(db: Db, userId: UserId): Promise<WireGuardPeer[]> {
  const rows = await db
    .selectFrom('wg_peers')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('expires_at', 'desc')
    .orderBy('public_key')
    .execute();
  return rows.map(toPeer);
}

export async function findPeerOfUser(
  db: Db,
  userId: UserId,
  publicKey: ConnectionId,
): Promise<WireGuardPeer | undefined> {
  const row = await db
    .selectFrom('wg_peers')
    .selectAll()
    .where('public_key', '=', publicKey)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row === undefined ? undefined : toPeer(row);
}

/**
 * Deletes one configuration; false when it was not there (another portal instance deleted it
 * first). With `expiredBy`, only when it expired by then: an /extend that committed since the
 * expiry sweep read it keeps it.
 */
export async function deletePeer(db: Db, publicKey: WireGuardKey, expiredBy?: string): Promise<boolean> {
  let query = db.deleteFrom('wg_peers').where('public_key', '=', publicKey);
  if (expiredBy !== undefined) query = query.where('expires_at', '<=', expiredBy);
  const result = await query.executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Configurations expiring after `now` and by `horizon` whose `configuration.expiring` is still to come, soonest first. */
export async function peersDueForExpiryWarning(
  db: Db,
  window: ExpiryWarningWindow,
  limit: number,
): Promise<WireGuardPeer[]> {
  return (await dueForExpiryWarning(db, 'wg_peers', window, limit)).map(toPeer);
}

/** Deletes every configuration of a user and returns exactly the ones this call deleted. */
export async function deletePeersOfUser(db: Db, userId: UserId): Promise<WireGuardPeer[]> {
  // On PostgreSQL by pages (src/storage/user-pages.ts); SQLite has no limit on a statement's time.
  const rows = isPostgres(db)
    ? await remainingPagesOfUser<Selectable<WireGuardPeersTable>>(db, PEER_ROWS, userId, null, 'delete')
    : await db.deleteFrom('wg_peers').where('user_id', '=', userId).returningAll().execute();
  return rows.map(toPeer);
}

/**
 * Deletes the configurations issued to a device (in one profile, or all) and returns exactly
 * the ones this call deleted (replacement, retirement).
 */
export async function deletePeersOfDevice(db: Db, deviceId: DeviceId, profileId?: ProfileId): Promise<WireGuardPeer[]> {
  let query = db.deleteFrom('wg_peers').where('device_id', '=', deviceId);
  if (profileId !== undefined) query = query.where('profile_id', '=', profileId);
  return (await query.returningAll().execute()).map(toPeer);
}

/**
 * The rows of configurations that should be on the nodes: user enabled, device (if any) not
 * suspended, not expired at `now`. Every path that puts a peer on a node reads through this
 * (reconcile, peer_list, a node's restart), so a disabled user's or a suspended device's
 * configuration is never put back by any of them.
 *
 * It starts from the configurations and leaves out those of the few disabled users and suspended
 * devices (each a partial index of their own; the values are literals so that both databases'
 * planners can use those indexes): a node's read takes its own configurations by the node's
 * index, and never reads every user (a join by enabled users did, at 500,000 users, for each
 * node). Each configuration's user exists (a foreign key), so this is the join by enabled users.
 */
function activeRows(db: Db, now: string) {
  return db
    .selectFrom('wg_peers')
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('users')
            .select('users.user_id')
            .whereRef('users.user_id', '=', 'wg_peers.user_id')
            .where('users.is_disabled', '=', sql.lit(1)),
        ),
      ),
    )
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('devices')
            .select('devices.device_id')
            .whereRef('devices.device_id', '=', 'wg_peers.device_id')
            .where('devices.state', '=', sql.lit('suspended')),
        ),
      ),
    )
    .where('wg_peers.expires_at', '>', now);
}

/** Configurations that should be on the nodes: user enabled, device not suspended, not expired. */
export async function activePeers(
  db: Db,
  filter: { now: string; nodeNumber?: NodeNumber; publicKeys?: readonly string[] },
): Promise<WireGuardPeer[]> {
  let query = activeRows(db, filter.now).selectAll('wg_peers');
  if (filter.nodeNumber !== undefined) query = query.where('wg_peers.node_number', '=', filter.nodeNumber);
  if (filter.publicKeys !== undefined) {
    if (filter.publicKeys.length === 0) return [];
    query = query.where('wg_peers.public_key', 'in', filter.publicKeys);
  }
  const rows = await query
    .orderBy('wg_peers.profile_id')
    .orderBy('wg_peers.created_at')
    .orderBy('wg_peers.public_key')
    .execute();
  return rows.map(toPeer);
}

/** A configuration as a reconcile pass compares it with its node: key, profile and addresses. */
export type PeerWantedOnNode = Pick<WireGuardPeer, 'publicKey' | 'profileId' | 'ipFour' | 'ipSix'>;

/**
 * The enabled, unexpired configurations of a node, with only what a pass compares and in no
 * particular order: at wireguard-go's cap (65,533) this reads in about a third of the time of
 * whole rows in listing order (bench/README.md, the full pass).
 */
export async function peersWantedOnNode(
  db: Db,
  filter: { now: string; nodeNumber: NodeNumber },
): Promise<PeerWantedOnNode[]> {
  const rows = await wantedOnNodeQuery(db, filter).execute();
  return rows.map((row) => ({
    publicKey: row.public_key as WireGuardKey,
    profileId: row.profile_id as ProfileId,
    ipFour: row.ip_four,
    ipSix: row.ip_six,
  }));
}

/** The statement of peersWantedOnNode: it reads the node's index (wg_peers_node), not every configuration. */
export function wantedOnNodeQuery(db: Db, filter: { now: string; nodeNumber: NodeNumber }) {
  return activeRows(db, filter.now)
    .select(['wg_peers.public_key', 'wg_peers.profile_id', 'wg_peers.ip_four', 'wg_peers.ip_six'])
    .where('wg_peers.node_number', '=', filter.nodeNumber);
}

/** Which of `keys` are wanted on the node now (enabled user, device not suspended, unexpired). */
export async function keysWantedOnNode(
  db: Db,
  filter: { now: string; nodeNumber: NodeNumber; keys: readonly WireGuardKey[] },
): Promise<Set<WireGuardKey>> {
  if (filter.keys.length === 0) return new Set();
  const rows = await wantedOnNodeQuery(db, filter).where('wg_peers.public_key', 'in', filter.keys).execute();
  return new Set(rows.map((row) => row.public_key as WireGuardKey));
}

/** A place in a profile's listing, which is ordered by (created_at, public_key). */
export interface ListingPosition {
  readonly createdAt: string;
  readonly publicKey: string;
}

/** One page of a profile's active configurations (see `activeListingPage`). */
export interface ListingPage {
  /** The JSON text of an array of connection objects (specification §2.3), in listing order. */
  readonly connections: string;
  /** The JSON text of the array of their user ids, in the same order (repeats included). */
  readonly userIds: string;
  readonly count: number;
  /** The last configuration on the page; null when it is empty. */
  readonly last: ListingPosition | null;
  /** The first expiry among the page's configurations (ATOM), when the page stops holding. */
  readonly changesAt: string | null;
}

/**
 * The active configurations of one profile as JSON texts of arrays of connection objects
 * (specification §2.3), oldest first (same second: by connection id), `pageSize` per page.
 */
export async function* activeConnectionsJsonPages(
  db: Db,
  profileId: ProfileId,
  now: string,
  pageSize: number,
): AsyncGenerator<string> {
  let after: ListingPosition | null = null;
  for (;;) {
    const page = await activeListingPage(db, { profileId, now, after, through: null, pageSize });
    if (page.count === 0) return;
    yield page.connections;
    if (page.count < pageSize || page.last === null) return;
    after = page.last;
  }
}

interface PageRow {
  readonly list: string;
  readonly users: string;
  readonly count: number | string;
  readonly changes_at: string | null;
  readonly last_created: string;
  readonly last_key: string;
}

/**
 * Up to `pageSize` active configurations of one profile after `after` (null: from the start)
 * and up to `through` (inclusive; null: to the end), in listing order. The database builds the
 * JSON: at 100,000 configurations this is several times faster, and far lighter on memory, than
 * building an object per row in JavaScript. Each page is one statement along the listing index
 * (profile, created_at, public_key), so a cached listing can rebuild one page alone
 * (src/core/listings/pages.ts). On PostgreSQL the text has spaces after `:` and `,`; the JSON
 * is the same.
 */
export async function activeListingPage(
  db: Db,
  range: {
    profileId: ProfileId;
    now: string;
    after: ListingPosition | null;
    through: ListingPosition | null;
    pageSize: number;
  },
): Promise<ListingPage> {
  // SQLite aggregates a materialized page in the order it was written, which is the listing's
  // order; an ORDER BY in json_group_array would sort each page again (a third of the time).
  // PostgreSQL guarantees no order without its own ORDER BY.
  const postgres = isPostgres(db);
  const list = postgres
    ? sql`json_agg(json_build_object(
        'user_id', user_id, 'connection_id', public_key, 'display_name', display_name,
        'ip_list', json_build_array(ip_four, ip_six), 'vpn_proto', 'wireguard', 'auth_key', auth_key)
        ORDER BY created_at, public_key)::text`
    : sql`json_group_array(json_object(
        'user_id', user_id, 'connection_id', public_key, 'display_name', display_name,
        'ip_list', json_array(ip_four, ip_six), 'vpn_proto', 'wireguard', 'auth_key', auth_key))`;
  const users = postgres
    ? sql`json_agg(user_id ORDER BY created_at, public_key)::text`
    : sql`json_group_array(user_id)`;
  const after = range.after ?? { createdAt: '', publicKey: '' };
  const through =
    range.through === null
      ? sql``
      : sql`AND (created_at, public_key) <= (${range.through.createdAt}, ${range.through.publicKey})`;
  const result = await sql<PageRow>`
    WITH page AS MATERIALIZED (
      SELECT user_id, public_key, display_name, ip_four, ip_six, auth_key, created_at, expires_at FROM wg_peers
      WHERE profile_id = ${range.profileId} AND (created_at, public_key) > (${after.createdAt}, ${after.publicKey}) ${through}
        AND expires_at > ${range.now}
        AND NOT EXISTS (SELECT 1 FROM users WHERE users.user_id = wg_peers.user_id AND users.is_disabled = 1)
        AND NOT EXISTS (SELECT 1 FROM devices WHERE devices.device_id = wg_peers.device_id AND devices.state = 'suspended')
      ORDER BY created_at, public_key LIMIT ${range.pageSize})
    SELECT (SELECT ${list} FROM page) AS list, (SELECT ${users} FROM page) AS users, (SELECT count(*) FROM page) AS count,
           (SELECT min(expires_at) FROM page) AS changes_at, last.created_at AS last_created, last.public_key AS last_key
    FROM (SELECT created_at, public_key FROM page ORDER BY created_at DESC, public_key DESC LIMIT 1) AS last`.execute(
    db,
  );
  const row = result.rows[0];
  if (row === undefined) return { connections: '[]', userIds: '[]', count: 0, last: null, changesAt: null };
  return {
    connections: row.list,
    userIds: row.users,
    count: Number(row.count),
    last: { createdAt: row.last_created, publicKey: row.last_key },
    changesAt: row.changes_at,
  };
}

/**
 * The first expiry after `now` among one profile's configurations (disabled users' too), or
 * null. Read along the expiry index, which stops at the profile's first row; min() over the
 * profile would visit every one of its future expiries (tens of milliseconds at 100,000).
 */
export async function nextPeerExpiry(db: Db, profileId: ProfileId, now: string): Promise<string | null> {
  const row = await db
    .selectFrom('wg_peers')
    .select('expires_at')
    .where('expires_at', '>', now)
    .where('profile_id', '=', profileId)
    .orderBy('expires_at')
    .limit(1)
    .executeTakeFirst();
  return row?.expires_at ?? null;
}

/** The earliest expiry of any configuration (expired ones included), or null when there is none. */
export async function earliestPeerExpiry(db: Db): Promise<string | null> {
  const row = await db
    .selectFrom('wg_peers')
    .select((eb) => eb.fn.min('expires_at').as('earliest'))
    .executeTakeFirst();
  return row?.earliest ?? null;
}

/** Expired configurations, oldest first, at most `limit` of them. */
export async function expiredPeers(db: Db, now: string, limit: number): Promise<WireGuardPeer[]> {
  const rows = await db
    .selectFrom('wg_peers')
    .selectAll()
    .where('expires_at', '<=', now)
    .orderBy('expires_at')
    .limit(limit)
    .execute();
  return rows.map(toPeer);
}

export function toPeer(row: Selectable<WireGuardPeersTable>): WireGuardPeer {
  return {
    publicKey: row.public_key as WireGuardKey,
    userId: row.user_id as UserId,
    profileId: row.profile_id as ProfileId,
    nodeNumber: row.node_number as NodeNumber,
    displayName: row.display_name,
    ipFour: row.ip_four,
    ipSix: row.ip_six,
    poolIndex: row.pool_index,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    authKey: row.auth_key,
    revision: toRevision(row.revision),
    expiryWarned: row.expiry_warned !== 0,
  };
}

/** The order of user_configuration_list: latest expiry first, then by key. */
function byExpiryThenKey(a: WireGuardPeer, b: WireGuardPeer): number {
  if (a.expiresAt !== b.expiresAt) return a.expiresAt < b.expiresAt ? 1 : -1;
  return a.publicKey < b.publicKey ? -1 : a.publicKey > b.publicKey ? 1 : 0;
}

/** How many WireGuard configurations one profile has on one node. */
export interface PeersInPool {
  readonly profileId: string;
  readonly nodeNumber: number;
  readonly count: number;
}

/** WireGuard configurations per profile and node: each holds one address pair of that pool (metrics). */
export async function countPeersByProfileAndNode(db: Db): Promise<PeersInPool[]> {
  const rows = await peerCountsQuery(db).execute();
  return rows.map((row) => ({ profileId: row.profile_id, nodeNumber: row.node_number, count: Number(row.count) }));
}

/**
 * The statement of countPeersByProfileAndNode: grouped in the order of the index by (node,
 * profile), which holds both columns, so the count reads that index alone, never the rows.
 */
export function peerCountsQuery(db: Db) {
  return db
    .selectFrom('wg_peers')
    .select(['node_number', 'profile_id', (eb) => eb.fn.countAll<number | string>().as('count')])
    .groupBy(['node_number', 'profile_id']);
}

/** Rows of one multi-row insert or look-up: well inside both databases' limits on parameters. */
const IMPORT_ROWS = 500;

/** The stored configurations holding any of these IPv4 or IPv6 addresses. */
export async function peersAtAddresses(
  db: Db,
  addresses: readonly { readonly ipFour: string; readonly ipSix: string }[],
): Promise<WireGuardPeer[]> {
  const found: WireGuardPeer[] = [];
  for (const group of sizeLimitedGroups(addresses, () => 1, IMPORT_ROWS)) {
    const rows = await db
      .selectFrom('wg_peers')
      .selectAll()
      .where((eb) =>
        eb.or([
          eb(
            'ip_four',
            'in',
            group.map((pair) => pair.ipFour),
          ),
          eb(
            'ip_six',
            'in',
            group.map((pair) => pair.ipSix),
          ),
        ]),
      )
      .execute();
    found.push(...rows.map(toPeer));
  }
  return found;
}

/**
 * Inserts configurations brought from another server (the eduVPN import), many per statement,
 * each with a new revision, and journals them for the listings as a create does (on SQLite the
 * insert trigger does; on PostgreSQL the statement itself). One that collides with a stored
 * one is skipped. Answers the keys it inserted.
 */
export async function insertImportedPeers(
  trx: Transaction<Database>,
  peers: readonly NewPeer[],
): Promise<WireGuardKey[]> {
  const inserted: WireGuardKey[] = [];
  for (const group of sizeLimitedGroups(peers, () => 1, IMPORT_ROWS)) {
    const keys = isPostgres(trx) ? await insertGroupOnPostgres(trx, group) : await insertGroupOnSqlite(trx, group);
    inserted.push(...keys);
  }
  return inserted;
}

async function insertGroupOnSqlite(trx: Transaction<Database>, group: readonly NewPeer[]): Promise<WireGuardKey[]> {
  // One writer at a time: one number for the statement, as a create's.
  const revision = await nextRevision(trx);
  const rows = await trx
    .insertInto('wg_peers')
    .values(group.map((peer) => ({ ...peerColumns(peer), revision })))
    .onConflict((conflict) => conflict.doNothing())
    .returning('public_key')
    .execute();
  return rows.map((row) => row.public_key as WireGuardKey);
}

async function insertGroupOnPostgres(trx: Transaction<Database>, group: readonly NewPeer[]): Promise<WireGuardKey[]> {
  const values = group.map((peer) => {
    const row = peerColumns(peer);
    return sql`(${row.public_key}, ${row.user_id}, ${row.profile_id}, ${row.node_number}, ${row.display_name},
      ${row.ip_four}, ${row.ip_six}, ${row.pool_index}, ${row.created_at}, ${row.expires_at}, ${row.auth_key},
      ${row.expiry_warned}, nextval('change_revision'), ${row.device_id})`;
  });
  const { rows } = await sql<{ public_key: string }>`
    WITH peer AS (
      INSERT INTO wg_peers (public_key, user_id, profile_id, node_number, display_name, ip_four, ip_six, pool_index,
        created_at, expires_at, auth_key, expiry_warned, revision, device_id)
      VALUES ${sql.join(values)}
      ON CONFLICT DO NOTHING
      RETURNING profile_id, created_at, public_key
    ), journal AS (
      INSERT INTO listing_changes (profile_id, created_at, public_key) SELECT profile_id, created_at, public_key FROM peer
    )
    SELECT public_key FROM peer`.execute(trx);
  return rows.map((row) => row.public_key as WireGuardKey);
}

function peerColumns(peer: NewPeer) {
  return {
    public_key: peer.publicKey,
    user_id: peer.userId,
    profile_id: peer.profileId,
    node_number: peer.nodeNumber,
    display_name: peer.displayName,
    ip_four: peer.ipFour,
    ip_six: peer.ipSix,
    pool_index: peer.poolIndex,
    created_at: peer.createdAt,
    expires_at: peer.expiresAt,
    auth_key: peer.authKey,
    expiry_warned: peer.expiryWarned ? 1 : 0,
    device_id: peer.deviceId,
  };
}

/** WireGuard configurations on one node (what its listing is expected to hold): counted from the index by (node, profile). */
export async function countPeersOnNode(db: Db, nodeNumber: NodeNumber): Promise<number> {
  const row = await db
    .selectFrom('wg_peers')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('node_number', '=', nodeNumber)
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}
