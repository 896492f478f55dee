// Opens an eduVPN 3.x deployment for the import: its database (SQLite, opened read-only, or
// PostgreSQL or MariaDB/MySQL in read-only transactions), checked to be a schema this reader
// knows before anything else is read, and its key files (src/eduvpn/key-files.ts). Records come
// in pages in a stable order: a keyed table's by keyset paging (one indexed query a page), a
// keyless table's along the rows' places (SQLite's rowid, PostgreSQL's blocks a range at a time)
// or by one streamed query (MariaDB/MySQL), so a table of millions of rows is read in linear
// time (on PostgreSQL 13 and older, a keyless table is scanned once a page) and never held in
// memory whole.
import SqliteDatabase from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  MysqlAdapter,
  MysqlDialect,
  PostgresAdapter,
  PostgresDialect,
  type RawBuilder,
  type SelectQueryBuilder,
  type SqlBool,
  SqliteDialect,
  sql,
} from 'kysely';
import { createPool } from 'mysql2';
import pg from 'pg';
import { describeDatabase, parseDatabaseLocation } from '../config/database-location.js';
import type { DatabaseLocation } from '../config/portal-config.js';
import { messageOf } from '../shared/error-message.js';
import { asUserId } from '../shared/ids.js';
import {
  type EduVpnDeployment,
  type EduVpnKeys,
  type EduVpnLeftBehind,
  type EduVpnLocation,
  type EduVpnRecordKind,
  type EduVpnSchemaVersion,
  KNOWN_EDUVPN_SCHEMA_VERSIONS,
} from './deployment.js';
import type { EduVpnDatabase } from './eduvpn-schema.js';
import { type EduVpnRecordOf, type EduVpnRecordTable, parseEduVpnRow } from './eduvpn-rows.js';
import { readEduVpnKeys, requireReadableFile } from './key-files.js';
import { describeMysqlLocation, isMysqlUrl, type MysqlLocation, parseMysqlUrl } from './mysql-location.js';
import { EduVpnReadError } from './read-error.js';

/** Rows per page unless the caller asks for another size. */
export const EDUVPN_PAGE_SIZE = 5000;
/**
 * How long a MariaDB/MySQL server waits for the reader to take the next rows of a streamed
 * table (net_write_timeout, 60 s by default) while the import writes the page before.
 */
const MYSQL_WRITE_TIMEOUT_S = 3600;

/** Where the eduVPN database is: one this portal could keep its own in, or MariaDB/MySQL. */
type EduVpnDatabaseLocation = DatabaseLocation | MysqlLocation;

export interface EduVpnReadOptions {
  /** Rows per page (default 5,000). */
  readonly pageSize?: number;
}

type EduVpnDb = Kysely<EduVpnDatabase>;
/**
 * The same database seen as tables of unchecked rows, for the paging queries that serve every
 * table alike: their rows go through the zod parsers of src/eduvpn/eduvpn-rows.ts anyway.
 */
type UncheckedTables = Record<string, Record<string, unknown>>;
type UncheckedDb = Kysely<UncheckedTables>;
/** A query of such tables whose rows are unchecked too. */
type UncheckedQuery = SelectQueryBuilder<UncheckedTables, string, Record<string, unknown>>;

/** The table each kind of record comes from. */
const TABLE_OF_KIND = {
  users: 'users',
  authorizations: 'oauth_authorizations',
  wireGuardPeers: 'wg_peers',
  certificates: 'certificates',
  connectionLog: 'connection_log',
  dailyStatistics: 'aggregate_stats',
} as const satisfies Record<EduVpnRecordKind, EduVpnRecordTable>;

/** The unique column each keyed table is paged along; the others are paged by row position. */
const KEY_OF_TABLE = {
  users: 'user_id',
  oauth_authorizations: 'auth_key',
  wg_peers: 'public_key',
  certificates: 'common_name',
} as const;
type KeyedTable = keyof typeof KEY_OF_TABLE;
/** The keyed tables whose rows belong to a user (foreign key `user_id`). */
type UserOwnedTable = Exclude<KeyedTable, 'users'>;
/** A record of such a table with its user as the database matched it (EduVpnUserOwned). */
type UserOwnedRecordOf<Table extends UserOwnedTable> = EduVpnRecordOf<Table> & { readonly userFound: boolean };
type KeylessTable = Exclude<EduVpnRecordTable, KeyedTable>;
/** The column a joined row names its user's id in. */
const OWNER_COLUMN = 'owner_user_id';
/** The column a row of a table without a key names its position in (positionRows). */
const POSITION_COLUMN = 'row_position';
/** A row of a table without a key, and where it is, for a message about it. */
interface PositionedRow {
  readonly row: Record<string, unknown>;
  readonly at: string;
}

/** A row's position in a PostgreSQL table: its block and its item in the block (items count from 1). */
interface Tid {
  readonly block: number;
  readonly item: number;
}

/** The rows a query of blockRangeRows asks for: after the row at `after` (a tid's text) and before block `end`. */
interface BlockRange {
  readonly after: string;
  readonly end: number;
  /** Rows at most. */
  readonly limit: number;
}

/**
 * Up to `limit` rows of `table` after the row at `after` and before block `end`, in ctid order,
 * each with its ctid (POSITION_COLUMN) and with `withOwner` its owner (withOwnerJoined). On
 * PostgreSQL 14 and later the two conditions make a TID range scan, which reads only the blocks
 * between them; older servers scan the whole table for it.
 */
function blockRangeQuery(db: EduVpnDb, table: KeylessTable, range: BlockRange, withOwner: boolean): UncheckedQuery {
  const unchecked = db as unknown as UncheckedDb;
  const page = unchecked
    .selectFrom(table)
    .selectAll()
    .select(sql.raw<string>('ctid').as(POSITION_COLUMN))
    .where(sql<SqlBool>`ctid > ${range.after}::tid AND ctid < ${tidText({ block: range.end, item: 0 })}::tid`)
    .orderBy(sql.raw('ctid'))
    .limit(range.limit);
  return withOwnerJoined(unchecked, page, withOwner);
}

/**
 * `page` (rows with their position in POSITION_COLUMN) as it is, or with `withOwner` each row
 * joined to its owner (ownerJoined), in the page's order: the join runs on the page once it is
 * chosen, so it costs the page's rows only. The position is ordered as the database has it (a
 * tid as a tid, not as its text).
 */
function withOwnerJoined(db: UncheckedDb, page: UncheckedQuery, withOwner: boolean): UncheckedQuery {
  if (!withOwner) return page;
  return db
    .selectFrom(page.as('page'))
    .selectAll('page')
    .$call(ownerJoined('page.user_id'))
    .orderBy(sql.ref(`page.${POSITION_COLUMN}`));
}

/**
 * Adds to a query the id of the user its `userIdColumn` matches (OWNER_COLUMN, null when none
 * does): a left join of users on its primary key, under the database's own comparison.
 */
function ownerJoined(userIdColumn: string): (query: UncheckedQuery) => UncheckedQuery {
  return (query) =>
    query.leftJoin('users as owner', 'owner.user_id', userIdColumn).select(sql.ref('owner.user_id').as(OWNER_COLUMN));
}

/** The tid's text as PostgreSQL writes it, `(block,item)`. */
function tidText(tid: Tid): string {
  return `(${tid.block},${tid.item})`;
}

/** A tid as the driver hands it over (its text). */
function parseTid(text: unknown): Tid {
  const match = typeof text === 'string' ? /^\((\d+),(\d+)\)$/.exec(text) : null;
  if (match === null) throw new EduVpnReadError(`the database answered ${String(text)} for a row's ctid`);
  return { block: Number(match[1]), item: Number(match[2]) };
}

/**
 * How many blocks a query's rows came from, when it read from after `from` up to the row `to`
 * (its last, the query being full) or to the block `to` (all rows before it): a block taken
 * only in part (the first after a row, the last up to a row) counts as half.
 */
function blocksTaken(from: Tid, to: Tid | number): number {
  const end = typeof to === 'number' ? to : to.block + 0.5;
  return Math.max(0.5, end - from.block - (from.item > 0 ? 0.5 : 0));
}

/**
 * The rows per block to size the next range by, after a query found `rows` in `blocks` (as
 * blocksTaken counts them): what it found, with the estimate so far weighed in as one block
 * more (a query that took part of a block only says little), and at least half the estimate so
 * far, so the next range is at most twice as long: a dense stretch after a run of empty blocks
 * is not read far past a page.
 */
function nextRowsPerBlock(estimate: number, rows: number, blocks: number): number {
  return Math.max((rows + estimate) / (blocks + 1), estimate / 2);
}

/**
 * The most rows a PostgreSQL block of `blockSize` bytes holds (its MaxHeapTuplesPerPage: a page
 * header of 24 bytes, then at least 28 bytes a row).
 */
function mostRowsPerBlock(blockSize: number): number {
  return Math.floor((blockSize - 24) / 28);
}

/**
 * Opens the deployment at `location`: the database first (refused unless its `version` is one
 * of KNOWN_EDUVPN_SCHEMA_VERSIONS), then every key file. Throws EduVpnReadError, with nothing
 * left open, when any of it cannot be read as eduVPN writes it.
 */
export async function readEduVpnDeployment(
  location: EduVpnLocation,
  options: EduVpnReadOptions = {},
): Promise<EduVpnDeployment> {
  const databaseLocation = parseLocation(location.database);
  const databaseDescription =
    databaseLocation.dialect === 'mysql' ? describeMysqlLocation(databaseLocation) : describeDatabase(databaseLocation);
  const db = await openEduVpnDatabase(databaseLocation, databaseDescription);
  try {
    const schemaVersion = await readSchemaVersion(db, databaseDescription);
    const keys = await readEduVpnKeys(location);
    const description = `${databaseDescription} (keys in ${location.configDir} and ${location.dataDir})`;
    return new OpenedDeployment(db, description, schemaVersion, keys, options.pageSize ?? EDUVPN_PAGE_SIZE);
  } catch (error) {
    await db.destroy();
    throw error;
  }
}

function parseLocation(database: string): EduVpnDatabaseLocation {
  if (!/^(sqlite:|postgres(ql)?:\/\/|mysql:\/\/|mariadb:\/\/)/.test(database))
    throw new EduVpnReadError(
      'the eduVPN database must be sqlite:PATH, postgres://USER:PASSWORD@HOST:PORT/DATABASE or mysql://USER:PASSWORD@HOST:PORT/DATABASE',
    );
  try {
    if (isMysqlUrl(database)) return parseMysqlUrl(database);
    return parseDatabaseLocation(database, process.cwd());
  } catch (error) {
    throw new EduVpnReadError(`the eduVPN database ${messageOf(error)}`);
  }
}

/** SQLite read-only (the file must exist); PostgreSQL and MariaDB/MySQL with every transaction read-only. */
async function openEduVpnDatabase(location: EduVpnDatabaseLocation, description: string): Promise<EduVpnDb> {
  if (location.dialect === 'mysql') return openMysql(location);
  if (location.dialect === 'sqlite') {
    await requireReadableFile(location.path, 'database');
    let sqlite: SqliteDatabase.Database;
    try {
      sqlite = new SqliteDatabase(location.path, { readonly: true, fileMustExist: true });
    } catch (error) {
      throw new EduVpnReadError(`cannot open ${description}: ${messageOf(error)}`);
    }
    return new Kysely<EduVpnDatabase>({ dialect: new SqliteDialect({ database: sqlite }) });
  }
  const pool = new pg.Pool({
    connectionString: location.url,
    max: 2,
    options: '-c default_transaction_read_only=on',
  });
  pool.on('error', () => {}); // an idle connection the server closed: the next query says so
  return new Kysely<EduVpnDatabase>({ dialect: new PostgresDialect({ pool }) });
}

/**
 * BIGINTs come as decimal strings (as from PostgreSQL), never as rounded numbers; the session is
 * read-only, and waits for a slow reader of a streamed table (see positionPages).
 */
function openMysql(location: MysqlLocation): EduVpnDb {
  const pool = createPool({
    host: location.host,
    port: location.port,
    socketPath: location.socketPath,
    user: location.user,
    password: location.password,
    database: location.database,
    charset: location.charset,
    connectionLimit: 2,
    supportBigNumbers: true,
    bigNumberStrings: true,
  });
  return new Kysely<EduVpnDatabase>({
    dialect: new MysqlDialect({
      pool,
      onCreateConnection: async (connection) => {
        await connection.executeQuery(CompiledQuery.raw('SET SESSION TRANSACTION READ ONLY'));
        await connection.executeQuery(CompiledQuery.raw(`SET SESSION net_write_timeout = ${MYSQL_WRITE_TIMEOUT_S}`));
      },
    }),
  });
}

/** The schema version, refused unless it is one this reader knows; duplicate rows of one version are fine. */
async function readSchemaVersion(db: EduVpnDb, description: string): Promise<EduVpnSchemaVersion> {
  const known = KNOWN_EDUVPN_SCHEMA_VERSIONS.join(', ');
  let rows: { current_version: string }[];
  try {
    rows = await db.selectFrom('version').select('current_version').distinct().execute();
  } catch (error) {
    if (/no such table|relation "version" does not exist|Table '[^']*\.version' doesn't exist/.test(messageOf(error)))
      throw new EduVpnReadError(
        `${description} has no table "version": not an eduVPN 3.x database (this reader knows schema versions ${known})`,
      );
    throw new EduVpnReadError(`cannot read ${description}: ${messageOf(error)}`);
  }
  const versions = [...new Set(rows.map((row) => String(row.current_version).trim()))];
  const [version] = versions;
  if (version === undefined)
    throw new EduVpnReadError(`${description}: table "version" is empty (this reader knows schema versions ${known})`);
  if (versions.length > 1)
    throw new EduVpnReadError(
      `${description}: table "version" names several versions (${versions.join(', ')}); a half-finished migration? This reader knows ${known}`,
    );
  if (!isKnownVersion(version))
    throw new EduVpnReadError(
      `${description} has eduVPN schema version ${version}, which this reader does not know (it knows ${known}); ask for an update of vpn-portal, or move from an eduVPN version with a known schema`,
    );
  return version;
}

function isKnownVersion(version: string): version is EduVpnSchemaVersion {
  return (KNOWN_EDUVPN_SCHEMA_VERSIONS as readonly string[]).includes(version);
}

class OpenedDeployment implements EduVpnDeployment {
  constructor(
    private readonly db: EduVpnDb,
    readonly description: string,
    readonly schemaVersion: EduVpnSchemaVersion,
    readonly keys: EduVpnKeys,
    private readonly pageSize: number,
  ) {}

  private get unchecked(): UncheckedDb {
    return this.db as unknown as UncheckedDb;
  }

  async count(kind: EduVpnRecordKind): Promise<number> {
    return this.countRows(TABLE_OF_KIND[kind]);
  }

  users(): AsyncIterable<readonly EduVpnRecordOf<'users'>[]> {
    return this.keyedPages('users');
  }

  authorizations(): AsyncIterable<readonly UserOwnedRecordOf<'oauth_authorizations'>[]> {
    return this.userOwnedPages('oauth_authorizations');
  }

  wireGuardPeers(): AsyncIterable<readonly UserOwnedRecordOf<'wg_peers'>[]> {
    return this.userOwnedPages('wg_peers');
  }

  certificates(): AsyncIterable<readonly UserOwnedRecordOf<'certificates'>[]> {
    return this.userOwnedPages('certificates');
  }

  /**
   * The history, each row with the user eduVPN's database matches it to (as userOwnedPages
   * does): on MariaDB `ALICE`'s sessions are `alice`'s, and must be found as hers here (her
   * history, a legal hold on her). eduVPN keeps a deleted user's history (connection_log has no
   * foreign key): a row that matches no user keeps `user_id` as written.
   */
  async *connectionLog(): AsyncIterable<readonly EduVpnRecordOf<'connection_log'>[]> {
    for await (const rows of this.positionRows('connection_log', true))
      yield rows.map(({ row, at }) => {
        const entry = parseEduVpnRow('connection_log', at, row);
        const owner = row[OWNER_COLUMN];
        return typeof owner === 'string' ? { ...entry, userId: asUserId(owner) } : entry;
      });
  }

  dailyStatistics(): AsyncIterable<readonly EduVpnRecordOf<'aggregate_stats'>[]> {
    return this.positionPages('aggregate_stats');
  }

  async leftBehind(): Promise<EduVpnLeftBehind> {
    // Schema 2022022201 has no guest counts.
    const guestUserCounts =
      this.schemaVersion === '2022022201'
        ? 0
        : await this.countRows('aggregate_stats', sql<SqlBool>`unique_guest_user_count <> 0`);
    return {
      localUsers: await this.countRows('local_users'),
      refreshTokens: await this.countRows('oauth_refresh_token_log'),
      liveStatistics: await this.countRows('live_stats'),
      guestUserCounts,
    };
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }

  /** A query on `table`; a failure (a table missing, a lost connection) becomes an error naming it. */
  private async reading<T>(table: string, query: () => Promise<T>): Promise<T> {
    try {
      return await query();
    } catch (error) {
      throw new EduVpnReadError(`cannot read table ${table} of ${this.description}: ${messageOf(error)}`);
    }
  }

  private async countRows(table: keyof EduVpnDatabase, where?: RawBuilder<SqlBool>): Promise<number> {
    const query = this.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number | string>().as('rows'))
      .$if(where !== undefined, (builder) => builder.where(where ?? sql<SqlBool>`true`));
    const row = await this.reading(table, () => query.executeTakeFirstOrThrow());
    return Number(row.rows);
  }

  /**
   * Pages along the table's unique key: each page is the next `pageSize` keys after the last one
   * seen. The `>` and the ORDER BY compare under the same collation, the column's, whose equal
   * values the unique key already keeps out; so a MariaDB/MySQL column that compares without
   * regard to case pages as exactly as a binary one, in its own order.
   */
  private async *keyedPages<Table extends KeyedTable>(table: Table): AsyncIterable<EduVpnRecordOf<Table>[]> {
    const key = KEY_OF_TABLE[table];
    for await (const rows of this.keyedRows(table, false))
      yield rows.map((row) => parseEduVpnRow(table, `${key} "${String(row[key])}"`, row));
  }

  /**
   * Pages of a table whose rows belong to a user, each row with the user eduVPN's database
   * matches it to: joined in that database, so under its own comparison, the one its foreign key
   * used (MariaDB's columns compare without regard to case and trailing spaces; a unique key
   * keeps out two users it would match alike).
   */
  private async *userOwnedPages<Table extends UserOwnedTable>(table: Table): AsyncIterable<UserOwnedRecordOf<Table>[]> {
    const key = KEY_OF_TABLE[table];
    for await (const rows of this.keyedRows(table, true))
      yield rows.map((row) => {
        const record = parseEduVpnRow(table, `${key} "${String(row[key])}"`, row);
        const owner = row[OWNER_COLUMN];
        return typeof owner === 'string'
          ? { ...record, userId: asUserId(owner), userFound: true }
          : { ...record, userFound: false };
      });
  }

  /** The rows of a keyed table, page by page; with `withOwner`, each with its user's id (OWNER_COLUMN). */
  private async *keyedRows(table: KeyedTable, withOwner: boolean): AsyncIterable<Record<string, unknown>[]> {
    const key = sql.ref(`${table}.${KEY_OF_TABLE[table]}`);
    let after: string | null = null;
    for (;;) {
      const query = this.unchecked
        .selectFrom(table)
        .selectAll(table)
        .$if(withOwner, ownerJoined(`${table}.user_id`))
        .$if(after !== null, (builder) => builder.where(key, '>', after))
        .orderBy(key)
        .limit(this.pageSize);
      const rows: Record<string, unknown>[] = await this.reading(table, () => query.execute());
      if (rows.length === 0) return;
      yield rows;
      const last: unknown = rows.at(-1)?.[KEY_OF_TABLE[table]];
      if (rows.length < this.pageSize || typeof last !== 'string') return;
      after = last;
    }
  }

  /** Pages of a table without a key, in the order of positionRows. */
  private async *positionPages<Table extends KeylessTable>(table: Table): AsyncIterable<EduVpnRecordOf<Table>[]> {
    for await (const rows of this.positionRows(table, false))
      yield rows.map(({ row, at }) => parseEduVpnRow(table, at, row));
  }

  /**
   * The rows of a table without a key, page by page, along the row's position: SQLite's rowid
   * (rowidRows) and PostgreSQL's ctid (blockRangeRows). A position changes only when a row is
   * updated, and the move is done with the old portal stopped. A server-side cursor would also
   * do, but would hold one transaction open across the whole import. MariaDB/MySQL shows no row
   * position, so there the table is read by one streamed query (streamedRows).
   *
   * With `withOwner`, each row also has the id of the user its `user_id` matches (OWNER_COLUMN,
   * null when none does), joined to the page once it is chosen: the join (one look-up of users'
   * primary key per row) leaves the paging as it is and costs the page's rows only.
   */
  private positionRows(table: KeylessTable, withOwner: boolean): AsyncIterable<PositionedRow[]> {
    const adapter = this.db.getExecutor().adapter;
    if (adapter instanceof MysqlAdapter) return this.streamedRows(table, withOwner);
    if (adapter instanceof PostgresAdapter) return this.blockRangeRows(table, withOwner);
    return this.rowidRows(table, withOwner);
  }

  /** SQLite: each page the next `pageSize` rowids after the last one seen, along the table's own b-tree. */
  private async *rowidRows(table: KeylessTable, withOwner: boolean): AsyncIterable<PositionedRow[]> {
    let after: number | null = null;
    for (;;) {
      const page = this.unchecked
        .selectFrom(table)
        .selectAll()
        .select(sql.raw<number>('rowid').as(POSITION_COLUMN))
        .$if(after !== null, (builder) => builder.where(sql<SqlBool>`rowid > ${after}`))
        .orderBy(sql.raw('rowid'))
        .limit(this.pageSize);
      const rows = await this.reading<Record<string, unknown>[]>(table, () =>
        withOwnerJoined(this.unchecked, page, withOwner).execute(),
      );
      if (rows.length === 0) return;
      yield rows.map((row) => ({ row, at: `at rowid ${String(row[POSITION_COLUMN])}` }));
      const last: unknown = rows.at(-1)?.[POSITION_COLUMN];
      if (rows.length < this.pageSize || last === undefined) return;
      after = Number(last);
    }
  }

  /**
   * PostgreSQL: the table read in ranges of blocks, each query the rows of the next few blocks
   * (blockRangeQuery: a TID range scan of those blocks only, on PostgreSQL 14 and later, and a
   * sort of their rows), so the whole read costs about one pass over the table. No index gives
   * ctid's order: a `ctid > last` page would sort every row after the last one seen, for every
   * page. Each range is sized to hold a page's rows by the rows per block seen so far
   * (nextRowsPerBlock; at first the most a block can hold), so a run of empty blocks is
   * crossed in few queries; a range holding more than a page is taken up to a page and
   * continued after its last row. Rows are handed on in pages of `pageSize` (the last one
   * fewer), so at most two pages' rows are held. The table's size is read at the start and
   * again when its last block is passed, and the read ends once a range would start past it.
   */
  private async *blockRangeRows(table: KeylessTable, withOwner: boolean): AsyncIterable<PositionedRow[]> {
    let { blocks, blockSize } = await this.blockCount(table);
    let rowsPerBlock = mostRowsPerBlock(blockSize);
    let after: Tid = { block: 0, item: 0 }; // no row is at item 0: the first range starts at block 0
    const held: PositionedRow[] = [];
    for (;;) {
      if (after.block >= blocks) ({ blocks } = await this.blockCount(table));
      if (after.block >= blocks) break;
      const end = after.block + Math.min(Math.ceil(this.pageSize / rowsPerBlock), blocks - after.block);
      const query = blockRangeQuery(this.db, table, { after: tidText(after), end, limit: this.pageSize }, withOwner);
      const rows = await this.reading<Record<string, unknown>[]>(table, () => query.execute());
      for (const row of rows) held.push({ row, at: `at ctid ${String(row[POSITION_COLUMN])}` });
      const last = rows.length === this.pageSize ? parseTid(rows.at(-1)?.[POSITION_COLUMN]) : null;
      rowsPerBlock = nextRowsPerBlock(rowsPerBlock, rows.length, blocksTaken(after, last ?? end));
      after = last ?? { block: end, item: 0 };
      if (held.length >= this.pageSize) yield held.splice(0, this.pageSize);
    }
    if (held.length > 0) yield held;
  }

  /** PostgreSQL: how many blocks `table` has now, and the server's block size. */
  private async blockCount(table: KeylessTable): Promise<{ blocks: number; blockSize: number }> {
    const row = await this.reading(table, () =>
      sql<{ blocks: string; block_size: number }>`SELECT
          pg_relation_size(${table}::regclass) / current_setting('block_size')::int AS blocks,
          current_setting('block_size')::int AS block_size`
        .execute(this.db)
        .then((result) => result.rows[0]),
    );
    if (row === undefined) throw new EduVpnReadError(`cannot read the size of table ${table} of ${this.description}`);
    return { blocks: Number(row.blocks), blockSize: row.block_size };
  }

  /**
   * The whole table in one query whose rows the driver takes from the socket only as the pages
   * are used (InnoDB hands them over in the order of its hidden row id, the order they were
   * written); rows are named by their place in that order. With `withOwner`, each joined to its
   * user by a look-up of users' primary key, which keeps the table's own order.
   */
  private async *streamedRows(table: KeylessTable, withOwner: boolean): AsyncIterable<PositionedRow[]> {
    const rows = this.unchecked
      .selectFrom(table)
      .selectAll(table)
      .$if(withOwner, ownerJoined(`${table}.user_id`))
      .stream();
    let page: PositionedRow[] = [];
    let position = 0;
    try {
      for await (const row of rows) {
        position += 1;
        page.push({ row, at: `number ${position}` });
        if (page.length < this.pageSize) continue;
        yield page;
        page = [];
      }
    } catch (error) {
      throw new EduVpnReadError(`cannot read table ${table} of ${this.description}: ${messageOf(error)}`);
    }
    if (page.length > 0) yield page;
  }
}
