// The database options: where it is (`database`, SQLite in `dataDir` by default) and how long a
// call waits for it (`databaseTimeout`, `databaseRetryFor`), each bounded so a typo cannot
// switch the limit off or overflow a timer.
import path from 'node:path';
import { durationMilliseconds } from '../shared/iso-duration.js';
import { DatabaseLocationError, parseDatabaseLocation } from './database-location.js';
import { mustParseDuration, type Report } from './option-checks.js';
import type { DatabaseLocation } from './portal-config.js';

export function resolveDatabase(
  text: string | undefined,
  dataDir: string,
  baseDir: string,
  report: Report,
): DatabaseLocation {
  if (text === undefined) return { dialect: 'sqlite', path: path.join(dataDir, 'db.sqlite') };
  try {
    return parseDatabaseLocation(text, baseDir);
  } catch (error) {
    // The message never repeats the value: a PostgreSQL URL may hold a password.
    if (!(error instanceof DatabaseLocationError)) throw error;
    report('database', error.message);
    return { dialect: 'sqlite', path: path.join(dataDir, 'db.sqlite') };
  }
}

/** At least a second (0 would mean "no limit" to PostgreSQL), at most an hour (timers overflow beyond 24 days). */
export function resolveDatabaseTimeout(text: string, report: Report): number {
  const milliseconds = durationMilliseconds(mustParseDuration(text));
  if (milliseconds < 1000 || milliseconds > 3_600_000)
    report('databaseTimeout', `"${text}" must be between PT1S and PT1H`);
  return Math.min(Math.max(milliseconds, 1000), 3_600_000);
}

/** 0 (never) to a minute: a call waits at most about this long beyond `databaseTimeout` for a server that restarts. */
export function resolveDatabaseRetryFor(text: string, report: Report): number {
  const milliseconds = durationMilliseconds(mustParseDuration(text));
  if (milliseconds > 60_000) report('databaseRetryFor', `"${text}" must be between PT0S and PT1M`);
  return Math.min(milliseconds, 60_000);
}
