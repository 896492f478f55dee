// eduVPN's `Db` section names its database as PHP's PDO does (`sqlite:/path`,
// `pgsql:host=…;port=…;dbname=…`, `mysql:host=…;port=…;dbname=…;unix_socket=…;charset=…`, with
// `dbUser`/`dbPass` beside it); this portal names one as `sqlite:PATH` or a `postgres://` URL,
// and the import reads a MariaDB/MySQL one from a `mysql://` URL. The password only ever appears
// in the URL written to portal.json, never in a message.
import { ConversionError } from './conversion-error.js';
import { DEFAULT_MYSQL_SOCKET, describeMysqlLocation, type MysqlLocation } from './mysql-location.js';

export type ConvertedDatabase =
  | {
      readonly kind: 'postgres';
      /** This portal's own database on eduVPN's server: `<name>_portal`, since the table names clash. */
      readonly portalUrl: string;
      readonly portalDatabase: string;
      /** The URLs with the password masked, for messages. */
      readonly portalDescription: string;
      readonly eduVpnDescription: string;
      readonly user: string;
    }
  | { readonly kind: 'sqlite'; readonly eduVpnPath: string }
  /** MariaDB/MySQL: read by the import only; this portal keeps its own database elsewhere. */
  | { readonly kind: 'mysql'; readonly eduVpn: MysqlLocation; readonly eduVpnDescription: string };

/** The parameters of a pgsql DSN that have a place in a PostgreSQL URL. */
const PGSQL_PARAMETERS = new Set(['host', 'port', 'dbname', 'user', 'password', 'sslmode']);
/** PDO's MySQL DSN parameters. */
const MYSQL_PARAMETERS = new Set(['host', 'port', 'dbname', 'unix_socket', 'charset']);

export function databaseFromPdo(db: { readonly [key: string]: unknown }): ConvertedDatabase {
  const dsn = db.dbDsn;
  if (typeof dsn !== 'string' || dsn === '')
    throw new ConversionError('Db.dbDsn: must be a PDO DSN such as pgsql:host=…;dbname=…');
  const separator = dsn.indexOf(':');
  const driver = separator < 0 ? dsn : dsn.slice(0, separator);
  const rest = dsn.slice(separator + 1);
  if (driver === 'sqlite') {
    if (rest === '' || rest === ':memory:') throw new ConversionError('Db.dbDsn: an SQLite DSN names no file');
    return { kind: 'sqlite', eduVpnPath: rest.startsWith('/') ? rest.replace(/^\/+/, '/') : rest };
  }
  if (driver === 'mysql') return mysqlFromPdo(readDsnParameters(rest, 'mysql', MYSQL_PARAMETERS), db);
  if (driver !== 'pgsql')
    throw new ConversionError(`Db.dbDsn: the PDO driver "${driver}" is not one eduVPN uses (sqlite, pgsql, mysql)`);
  return postgresFromPdo(readDsnParameters(rest, 'pgsql', PGSQL_PARAMETERS), db);
}

/** `name=value` pairs; pgsql separates them by `;` or spaces, mysql by `;`. */
function readDsnParameters(text: string, driver: 'pgsql' | 'mysql', known: ReadonlySet<string>): Map<string, string> {
  const parameters = new Map<string, string>();
  const separator = driver === 'pgsql' ? /[;\s]+/ : /;/;
  for (const part of text.split(separator).filter((entry) => entry.trim() !== '')) {
    const equals = part.indexOf('=');
    const name = part.slice(0, equals).trim();
    if (equals <= 0 || !known.has(name))
      throw new ConversionError(
        `Db.dbDsn: "${equals <= 0 ? part : name}" is not a ${driver} DSN parameter this portal takes (${[...known].join(', ')})`,
      );
    parameters.set(name, part.slice(equals + 1).trim());
  }
  return parameters;
}

/**
 * As PDO connects: over `unix_socket` when given, else over the default socket for host
 * `localhost` (or no host), else over TCP to host and port.
 */
function mysqlFromPdo(parameters: Map<string, string>, db: { readonly [key: string]: unknown }): ConvertedDatabase {
  const database = parameters.get('dbname');
  if (database === undefined || database === '') throw new ConversionError('Db.dbDsn: the mysql DSN names no dbname');
  const port = parameters.get('port');
  if (port !== undefined && !/^\d{1,5}$/.test(port))
    throw new ConversionError(`Db.dbDsn: port "${port}" is not a port`);
  const host = parameters.get('host') ?? 'localhost';
  const socket = parameters.get('unix_socket');
  if (socket !== undefined && !socket.startsWith('/'))
    throw new ConversionError(`Db.dbDsn: unix_socket "${socket}" is not an absolute path`);
  const overSocket = socket !== undefined || host === 'localhost';
  const eduVpn: MysqlLocation = {
    dialect: 'mysql',
    user: stringOption(db.dbUser, 'Db.dbUser') ?? '',
    password: stringOption(db.dbPass, 'Db.dbPass') ?? '',
    host,
    port: overSocket || port === undefined ? undefined : Number(port),
    socketPath: overSocket ? (socket ?? DEFAULT_MYSQL_SOCKET) : undefined,
    database,
    charset: parameters.get('charset'),
  };
  return { kind: 'mysql', eduVpn, eduVpnDescription: describeMysqlLocation(eduVpn) };
}

function postgresFromPdo(parameters: Map<string, string>, db: { readonly [key: string]: unknown }): ConvertedDatabase {
  const user = stringOption(db.dbUser, 'Db.dbUser') ?? parameters.get('user') ?? '';
  const password = stringOption(db.dbPass, 'Db.dbPass') ?? parameters.get('password') ?? '';
  const database = parameters.get('dbname');
  if (database === undefined || database === '') throw new ConversionError('Db.dbDsn: the pgsql DSN names no dbname');
  const port = parameters.get('port');
  if (port !== undefined && !/^\d{1,5}$/.test(port))
    throw new ConversionError(`Db.dbDsn: port "${port}" is not a port`);
  // No host: libpq's default socket, which Debian keeps in /var/run/postgresql.
  const host = parameters.get('host') ?? '/var/run/postgresql';
  const sslmode = parameters.get('sslmode');
  const urlOf = (name: string, shownPassword: string): string => {
    const account = user === '' ? '' : `${encodeURIComponent(user)}${shownPassword === '' ? '' : `:${shownPassword}`}@`;
    const query = new URLSearchParams();
    if (host.startsWith('/')) query.set('host', host);
    if (sslmode !== undefined) query.set('sslmode', sslmode);
    const server = host.startsWith('/')
      ? ''
      : `${host.includes(':') ? `[${host}]` : host}${port === undefined ? '' : `:${port}`}`;
    const search = query.size === 0 ? '' : `?${query.toString()}`;
    return `postgres://${account}${server}/${encodeURIComponent(name)}${search}`;
  };
  const masked = password === '' ? '' : '***';
  const portalDatabase = `${database}_portal`;
  return {
    kind: 'postgres',
    portalUrl: urlOf(portalDatabase, encodeURIComponent(password)),
    portalDatabase,
    portalDescription: urlOf(portalDatabase, masked),
    eduVpnDescription: urlOf(database, masked),
    user,
  };
}

function stringOption(value: unknown, option: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new ConversionError(`${option}: must be a string`);
  return value;
}
