// An eduVPN database kept in MariaDB or MySQL, named for the import as a URL:
// `mysql://USER:PASSWORD@HOST:PORT/DATABASE`, with `?socket=PATH` for a Unix socket (the host is
// then ignored, as the mysql client does for localhost) and `&charset=NAME` for the connection's
// character set (PDO's `charset`); `mariadb://` is the same. This portal never keeps its own
// database there: only the eduVPN reader opens one. The URL may carry a password, so it is shown
// only through `describeMysqlLocation`, which masks it, and no error message repeats it.

export interface MysqlLocation {
  readonly dialect: 'mysql';
  readonly user: string;
  readonly password: string;
  /** The server's host name or address (without brackets for IPv6); unused with `socketPath`. */
  readonly host: string;
  readonly port: number | undefined;
  readonly socketPath: string | undefined;
  readonly database: string;
  readonly charset: string | undefined;
}

/** Debian's socket, where PHP's PDO (and the mysql client) connect for host `localhost`. */
export const DEFAULT_MYSQL_SOCKET = '/run/mysqld/mysqld.sock';

const MYSQL_URL_SHAPE = 'mysql://USER:PASSWORD@HOST:PORT/DATABASE (or …@localhost/DATABASE?socket=PATH)';
/** The query parameters a URL may carry. */
const PARAMETERS = new Set(['socket', 'charset']);

export class MysqlLocationError extends Error {
  override readonly name = 'MysqlLocationError';
}

/** Whether `text` names a MariaDB/MySQL database (and should be parsed by parseMysqlUrl). */
export function isMysqlUrl(text: string): boolean {
  return /^(mysql|mariadb):\/\//.test(text);
}

/** Parses a `mysql://` or `mariadb://` URL; the error never repeats the text (it may hold a password). */
export function parseMysqlUrl(text: string): MysqlLocation {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new MysqlLocationError(
      `is not a valid MariaDB/MySQL URL (${MYSQL_URL_SHAPE}; percent-encode special characters in the password)`,
    );
  }
  if (url.protocol !== 'mysql:' && url.protocol !== 'mariadb:')
    throw new MysqlLocationError(`must be a MariaDB/MySQL URL: ${MYSQL_URL_SHAPE}`);
  for (const name of url.searchParams.keys())
    if (!PARAMETERS.has(name))
      throw new MysqlLocationError(
        `has parameter "${name}"; a MariaDB/MySQL URL may have only ${[...PARAMETERS].join(', ')}`,
      );
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw new MysqlLocationError(`names no host: ${MYSQL_URL_SHAPE}`);
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (database === '' || database.includes('/')) throw new MysqlLocationError(`names no database: ${MYSQL_URL_SHAPE}`);
  const socketPath = url.searchParams.get('socket') ?? undefined;
  if (socketPath !== undefined && !socketPath.startsWith('/'))
    throw new MysqlLocationError('names a socket that is not an absolute path');
  return {
    dialect: 'mysql',
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    host,
    port: url.port === '' ? undefined : Number(url.port),
    socketPath,
    database,
    charset: url.searchParams.get('charset') ?? undefined,
  };
}

/** The URL that parseMysqlUrl reads back as `location`. */
export function formatMysqlUrl(location: MysqlLocation): string {
  return urlOf(location, encodeURIComponent(location.password));
}

/** The URL for messages and logs: its password masked. */
export function describeMysqlLocation(location: MysqlLocation): string {
  return urlOf(location, location.password === '' ? '' : '***');
}

function urlOf(location: MysqlLocation, shownPassword: string): string {
  const account =
    location.user === ''
      ? ''
      : `${encodeURIComponent(location.user)}${shownPassword === '' ? '' : `:${shownPassword}`}@`;
  const host = location.host.includes(':') ? `[${location.host}]` : location.host;
  const port = location.port === undefined ? '' : `:${location.port}`;
  const query = new URLSearchParams();
  if (location.socketPath !== undefined) query.set('socket', location.socketPath);
  if (location.charset !== undefined) query.set('charset', location.charset);
  const search = query.size === 0 ? '' : `?${query.toString().replaceAll('%2F', '/')}`;
  return `mysql://${account}${host}${port}/${encodeURIComponent(location.database)}${search}`;
}
