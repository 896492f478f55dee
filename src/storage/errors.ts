// Recognises constraint violations across drivers, so callers can retry instead of failing.

export function isUniqueViolation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  // better-sqlite3: SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY; PostgreSQL: 23505.
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/**
 * A write that lost a race with another transaction — typically on another portal instance
 * sharing the PostgreSQL database — and succeeds when the whole transaction is tried again:
 * a unique or foreign key violation (the row it counted on was just taken or deleted), a
 * deadlock, or a serialization failure.
 */
export function isWriteConflict(error: unknown): boolean {
  if (isUniqueViolation(error)) return true;
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  return code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || code === '23503' || code === '40P01' || code === '40001';
}
