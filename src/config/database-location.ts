// The `database` option: `sqlite:PATH` (the embedded default) or a PostgreSQL URL
// (`postgres://USER:PASSWORD@HOST:PORT/DATABASE`, also `postgresql://`). A URL can carry a
// password, so it is only ever shown through `describeDatabase`, which masks it.
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
    if (file === '') throw new DatabaseLocationError('must be sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE');
    return { dialect: 'sqlite', path: path.resolve(baseDir, file) };
  }
  if (!/^postgres(ql)?:\/\//.test(text)) {
    throw new DatabaseLocationError('must be sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE');
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new DatabaseLocationError(
      'is not a valid PostgreSQL URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE; percent-encode special characters in the password)',
    );
  }
  if (url.hostname === '' && !url.searchParams.has('host')) throw new DatabaseLocationError('the PostgreSQL URL names no host');
  if (url.pathname.replace(/^\//, '') === '') throw new DatabaseLocationError('the PostgreSQL URL names no database (…/DATABASE)');
  return { dialect: 'postgres', url: text };
}

/** The location for messages and logs: the path, or the URL with its password masked. */
export function describeDatabase(location: DatabaseLocation): string {
  if (location.dialect === 'sqlite') return `sqlite:${location.path}`;
  try {
    const url = new URL(location.url);
    if (url.password !== '') url.password = '***';
    for (const name of ['password', 'sslpassword']) if (url.searchParams.has(name)) url.searchParams.set(name, '***');
    return url.href;
  } catch {
    return 'postgres://(unparsable URL)';
  }
}
