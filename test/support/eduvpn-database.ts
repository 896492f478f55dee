// An eduVPN 3.x database as eduVPN's own schema files lay it out (schema 2023011801, or the
// 2022022201 of eduVPN 3.0–3.2, whose aggregate_stats has no unique_guest_user_count and
// whose connection_log has no index), in a SQLite file or an empty PostgreSQL or MariaDB
// database, filled with bulk inserts in one transaction. The same DDL on every engine, as
// eduVPN runs it (MariaDB makes BOOLEAN a TINYINT(1)). Written from the columns the facts
// describe, not from eduVPN's files, and independent of the reader it tests.
import SqliteDatabase from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';

export type EduVpnTestSchemaVersion = '2022022201' | '2023011801';

/** One column: its name and its SQL type with constraints, the same on both engines. */
type ColumnSpec = readonly [name: string, definition: string];

const TEXT = 'VARCHAR(255) NOT NULL';
const NULLABLE_TEXT = 'VARCHAR(255) DEFAULT NULL';

/** The tables of schema 2023011801, in an order that satisfies their foreign keys. */
function tablesOf(version: EduVpnTestSchemaVersion): [string, ColumnSpec[], string[]][] {
  const aggregate: ColumnSpec[] = [
    ['date', TEXT],
    ['profile_id', TEXT],
    ['max_connection_count', 'BIGINT NOT NULL'],
    ['unique_user_count', 'BIGINT NOT NULL'],
  ];
  if (version === '2023011801') aggregate.push(['unique_guest_user_count', 'BIGINT NOT NULL']);
  const configurationColumns = (unique: ColumnSpec[]): ColumnSpec[] => [
    ['node_number', 'BIGINT NOT NULL'],
    ['profile_id', TEXT],
    ['display_name', TEXT],
    ...unique,
    ['created_at', TEXT],
    ['expires_at', TEXT],
    ['auth_key', 'VARCHAR(255) REFERENCES oauth_authorizations(auth_key) ON DELETE CASCADE'],
    ['user_id', `${TEXT} REFERENCES users(user_id) ON DELETE CASCADE`],
  ];
  return [
    [
      'users',
      [
        ['user_id', 'VARCHAR(255) NOT NULL PRIMARY KEY'],
        ['last_seen', TEXT],
        ['permission_list', 'TEXT NOT NULL'],
        ['auth_data', 'TEXT DEFAULT NULL'],
        ['is_disabled', 'BOOLEAN NOT NULL'],
      ],
      [],
    ],
    [
      'local_users',
      [
        ['user_id', 'VARCHAR(255) NOT NULL PRIMARY KEY'],
        ['password_hash', TEXT],
        ['created_at', TEXT],
      ],
      ['UNIQUE(user_id)'],
    ],
    [
      'oauth_authorizations',
      [
        ['auth_key', 'VARCHAR(255) NOT NULL PRIMARY KEY'],
        ['client_id', TEXT],
        ['scope', TEXT],
        ['authorized_at', TEXT],
        ['expires_at', TEXT],
        ['user_id', `${TEXT} REFERENCES users(user_id) ON DELETE CASCADE`],
      ],
      ['UNIQUE(auth_key)'],
    ],
    [
      'oauth_refresh_token_log',
      [
        ['auth_key', `${TEXT} REFERENCES oauth_authorizations(auth_key) ON DELETE CASCADE`],
        ['refresh_token_id', TEXT],
      ],
      ['UNIQUE(auth_key, refresh_token_id)'],
    ],
    ['certificates', configurationColumns([['common_name', 'VARCHAR(255) UNIQUE NOT NULL']]), []],
    [
      'wg_peers',
      configurationColumns([
        ['public_key', 'VARCHAR(255) NOT NULL UNIQUE'],
        ['ip_four', 'VARCHAR(255) NOT NULL UNIQUE'],
        ['ip_six', 'VARCHAR(255) NOT NULL UNIQUE'],
      ]),
      [],
    ],
    [
      'connection_log',
      [
        ['user_id', TEXT],
        ['profile_id', TEXT],
        ['vpn_proto', TEXT],
        ['connection_id', TEXT],
        ['ip_four', TEXT],
        ['ip_six', TEXT],
        ['connected_at', TEXT],
        ['bytes_in', 'BIGINT DEFAULT NULL'],
        ['bytes_out', 'BIGINT DEFAULT NULL'],
        ['disconnected_at', NULLABLE_TEXT],
      ],
      [],
    ],
    [
      'live_stats',
      [
        ['date_time', TEXT],
        ['profile_id', TEXT],
        ['connection_count', 'BIGINT NOT NULL'],
      ],
      [],
    ],
    ['aggregate_stats', aggregate, []],
  ];
}

/** The statements that make an empty eduVPN database of `version`, `version` table included. */
export function eduVpnSchemaStatements(version: EduVpnTestSchemaVersion): string[] {
  const statements = tablesOf(version).map(([table, columns, constraints]) => {
    const lines = [...columns.map(([name, definition]) => `${name} ${definition}`), ...constraints];
    return `CREATE TABLE IF NOT EXISTS ${table} (\n    ${lines.join(',\n    ')}\n)`;
  });
  if (version === '2023011801')
    statements.push('CREATE INDEX IF NOT EXISTS connection_log_connected_at ON connection_log(connected_at)');
  // eduVPN's Migration class makes this table, not the schema file.
  statements.push('CREATE TABLE version (current_version TEXT NOT NULL)');
  return statements;
}

/** A row as inserted: column name to value (booleans are turned into 0/1 for SQLite). */
export type EduVpnRow = Readonly<Record<string, string | number | boolean | null>>;
/** Rows per table, inserted in the order of the schema (foreign keys first). */
export type EduVpnTableRows = ReadonlyMap<string, readonly EduVpnRow[]>;

export type EduVpnDatabaseTarget =
  | { readonly dialect: 'sqlite'; readonly path: string }
  | { readonly dialect: 'postgres'; readonly url: string }
  /** mysql://USER:PASSWORD@HOST:PORT/DATABASE */
  | { readonly dialect: 'mysql'; readonly url: string };

/** Creates the schema and inserts `rows` (with `versionRows` in `version`) in one transaction. */
export async function writeEduVpnDatabase(
  target: EduVpnDatabaseTarget,
  version: EduVpnTestSchemaVersion,
  rows: EduVpnTableRows,
  versionRows: readonly string[] = [version],
): Promise<void> {
  const tables = [...tablesOf(version).map(([table]) => table), 'version'];
  const allRows = new Map(rows);
  allRows.set(
    'version',
    versionRows.map((current_version) => ({ current_version })),
  );
  if (target.dialect === 'sqlite') writeSqlite(target.path, version, tables, allRows);
  else if (target.dialect === 'mysql') await writeMysql(target.url, version, tables, allRows);
  else await writePostgres(target.url, version, tables, allRows);
}

function writeSqlite(file: string, version: EduVpnTestSchemaVersion, tables: string[], rows: EduVpnTableRows): void {
  const sqlite = new SqliteDatabase(file);
  try {
    sqlite.pragma('foreign_keys = ON');
    sqlite.transaction(() => {
      for (const statement of eduVpnSchemaStatements(version)) sqlite.exec(statement);
      for (const table of tables) {
        const tableRows = rows.get(table) ?? [];
        const first = tableRows[0];
        if (first === undefined) continue;
        const columns = Object.keys(first);
        const insert = sqlite.prepare(
          `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
        );
        for (const row of tableRows) insert.run(columns.map((column) => sqliteValue(row[column] ?? null)));
      }
    })();
  } finally {
    sqlite.close();
  }
}

function sqliteValue(value: string | number | boolean | null): string | number | null {
  return typeof value === 'boolean' ? (value ? 1 : 0) : value;
}

/** Rows per INSERT on PostgreSQL: well below its 65,535 parameters for eduVPN's widest table. */
const POSTGRES_ROWS_PER_INSERT = 2000;

async function writePostgres(
  url: string,
  version: EduVpnTestSchemaVersion,
  tables: string[],
  rows: EduVpnTableRows,
): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    for (const statement of eduVpnSchemaStatements(version)) await client.query(statement);
    for (const table of tables) {
      const tableRows = rows.get(table) ?? [];
      const first = tableRows[0];
      if (first === undefined) continue;
      const columns = Object.keys(first);
      for (let start = 0; start < tableRows.length; start += POSTGRES_ROWS_PER_INSERT) {
        const chunk = tableRows.slice(start, start + POSTGRES_ROWS_PER_INSERT);
        const values: unknown[] = [];
        const tuples = chunk.map((row) => {
          const placeholders = columns.map((column) => {
            values.push(row[column] ?? null);
            return `$${values.length}`;
          });
          return `(${placeholders.join(', ')})`;
        });
        await client.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${tuples.join(', ')}`, values);
      }
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
}

/** Rows per INSERT on MariaDB: one statement well below its max_allowed_packet. */
const MYSQL_ROWS_PER_INSERT = 2000;

async function writeMysql(
  url: string,
  version: EduVpnTestSchemaVersion,
  tables: string[],
  rows: EduVpnTableRows,
): Promise<void> {
  const connection = await mysql.createConnection({ uri: url });
  try {
    // DDL commits by itself in MariaDB: the schema first, then the rows in one transaction.
    for (const statement of eduVpnSchemaStatements(version)) await connection.query(statement);
    await connection.beginTransaction();
    for (const table of tables) {
      const tableRows = rows.get(table) ?? [];
      const first = tableRows[0];
      if (first === undefined) continue;
      const columns = Object.keys(first);
      for (let start = 0; start < tableRows.length; start += MYSQL_ROWS_PER_INSERT) {
        const chunk = tableRows.slice(start, start + MYSQL_ROWS_PER_INSERT);
        await connection.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ?`, [
          chunk.map((row) => columns.map((column) => row[column] ?? null)),
        ]);
      }
    }
    await connection.commit();
  } catch (error) {
    await connection.rollback().catch(() => undefined);
    throw error;
  } finally {
    await connection.end();
  }
}

/** Runs one statement on a written eduVPN database (`sqlite:PATH`, a PostgreSQL or a mysql:// URL): a test's hand edit. */
export async function runOnEduVpnDatabase(database: string, statement: string): Promise<void> {
  if (database.startsWith('mysql://')) {
    const connection = await mysql.createConnection({ uri: database });
    try {
      await connection.query(statement);
    } finally {
      await connection.end();
    }
    return;
  }
  if (database.startsWith('sqlite:')) {
    const sqlite = new SqliteDatabase(database.slice('sqlite:'.length));
    try {
      sqlite.exec(statement);
    } finally {
      sqlite.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: database });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
