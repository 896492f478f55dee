// Recognises constraint violations across drivers, so callers can retry instead of failing.

export function isUniqueViolation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  // better-sqlite3: SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY; PostgreSQL: 23505.
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}
