// The `database` option: `sqlite:PATH` (the embedded default) or a PostgreSQL URL
// (`postgres://USER:PASSWORD@HOST:PORT/DATABASE`, also `postgresql://`), also over a Unix
// socket with no host and the socket's folder in `host=` (`postgres://vpn@/vpn?host=/var/run/postgresql`,
// Debian's default, as libpq and pg read it). A URL can carry a password, so it is only ever
// shown through `describeDatabase`, which masks it.
import path from 'node:path';
import type { DatabaseLocation } from './portal-config.js';

/** What the configuration schema accepts; `parseDatabaseLocation` checks the details. */
export const DATABASE_PATTERN = /^(sqlite:.+|postgres(ql)?:\/\/.+)$/s;

export class DatabaseLocationError extends Error {
  override readonly name = 'DatabaseLocationError';
}

/**
 * Parses a `database` value; a relative SQLite path is taken from `baseDir`. The error
 * message never repeats the value (it may hold a password).
 */
export function parseDatabaseLocation(text: string, baseDir: string): DatabaseLocation {
  if (text.startsWith('sqlite:')) {
    const file = text.slice('sqlite:'.length);
    if (file === '')
      throw new DatabaseLocationError('must be sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE');
    return { dialect: 'sqlite', path: path.resolve(baseDir, file) };
  }
  if (!/^postgres(ql)?:\/\//.test(text)) {
    throw new DatabaseLocationError('must be sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE');
  }
  const url = parsePostgresUrl(text);
  if (url === null) {
    throw new DatabaseLocationError(
      'is not a valid PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE, or postgres://USER@/DATABASE?host=/var/run/postgresql for a Unix socket; percent-encode special characters in the password)',
    );
  }
  if (url.hostname === NO_HOST && !url.searchParams.has('host'))
    throw new DatabaseLocationError('the PostgreSQL URL names no host (nor a socket folder in ?host=)');
  if (url.pathname.replace(/^\//, '') === '')
    throw new DatabaseLocationError('the PostgreSQL URL names no database (…/DATABASE)');
  return { dialect: 'postgres', url: text };
}

/** The location for messages and logs: the path, or the URL with its password masked. */
export function describeDatabase(location: DatabaseLocation): string {
  if (location.dialect === 'sqlite') return `sqlite:${location.path}`;
  const url = parsePostgresUrl(location.url);
  if (url === null) return 'postgres://(unparsable URL)';
  if (url.password !== '') url.password = '***';
  for (const name of ['password', 'sslpassword']) if (url.searchParams.has(name)) url.searchParams.set(name, '***');
  return url.href.replace(`@${NO_HOST}/`, '@/').replace(`//${NO_HOST}/`, '///');
}

/** Stands for the empty host of a Unix-socket URL, which the URL parser refuses after a user name. */
const NO_HOST = 'no-host.invalid';

/** The URL, with NO_HOST as its host when it names none (`postgres://vpn@/vpn?host=…`); null when unparsable. */
function parsePostgresUrl(text: string): URL | null {
  const withHost = text.replace(/^(postgres(?:ql)?:\/\/(?:[^@/?#]*@)?)(?=[/?#]|$)/, `$1${NO_HOST}`);
  try {
    return new URL(withHost);
  } catch {
    return null;
  }
}
