// eduVPN's `Db` section names its database as PHP's PDO does (`sqlite:/path`,
// `pgsql:host=…;port=…;dbname=…`, with `dbUser`/`dbPass` beside it); this portal names one as
// `sqlite:PATH` or a `postgres://` URL. The password only ever appears in the URL written to
// portal.json, never in a message.
import { ConversionError } from './conversion-error.js';

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
  | { readonly kind: 'unsupported'; readonly driver: string };

/** The parameters of a pgsql DSN that have a place in a PostgreSQL URL. */
const PGSQL_PARAMETERS = new Set(['host', 'port', 'dbname', 'user', 'password', 'sslmode']);

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
  if (driver === 'mysql') return { kind: 'unsupported', driver };
  if (driver !== 'pgsql')
    throw new ConversionError(`Db.dbDsn: the PDO driver "${driver}" is not one eduVPN uses (sqlite, pgsql, mysql)`);
  return postgresFromPdo(readPgsqlParameters(rest), db);
}

function readPgsqlParameters(text: string): Map<string, string> {
  const parameters = new Map<string, string>();
  for (const part of text.split(/[;\s]+/).filter((entry) => entry !== '')) {
    const equals = part.indexOf('=');
    const name = part.slice(0, equals);
    if (equals <= 0 || !PGSQL_PARAMETERS.has(name))
      throw new ConversionError(
        `Db.dbDsn: "${equals <= 0 ? part : name}" is not a pgsql DSN parameter this portal takes (${[...PGSQL_PARAMETERS].join(', ')})`,
      );
    parameters.set(name, part.slice(equals + 1));
  }
  return parameters;
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
