// A real failure of one statement, for the stories of what a failed write leaves behind: a
// trigger that makes the database refuse one kind of write to a table, on SQLite and PostgreSQL.
import { sql } from 'kysely';
import type { Db } from '../../src/storage/database.js';
import { isPostgres } from '../../src/storage/database.js';

export interface RefusalOptions {
  /** PostgreSQL only: the SQLSTATE of the refusal (a plain `P0001` without). */
  readonly sqlState?: string;
}

/**
 * From now on the database refuses every `operation` on `table` with `message`; the answer takes
 * the refusal away again. `name` names the trigger (and its function), unique in the database.
 */
export async function refuseWrites(
  db: Db,
  name: string,
  operation: 'INSERT' | 'UPDATE' | 'DELETE',
  table: string,
  message: string,
  options: RefusalOptions = {},
): Promise<() => Promise<void>> {
  const trigger = sql.raw(name);
  const on = sql.raw(`${operation} ON ${table}`);
  const text = sql.raw(`'${message.replaceAll("'", "''")}'`);
  if (isPostgres(db)) {
    const code = sql.raw(options.sqlState === undefined ? '' : ` USING ERRCODE = '${options.sqlState}'`);
    await sql`CREATE FUNCTION ${trigger}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION ${text}${code}; END $$`.execute(db);
    await sql`CREATE TRIGGER ${trigger} BEFORE ${on} FOR EACH ROW EXECUTE FUNCTION ${trigger}()`.execute(db);
    return async () => {
      await sql`DROP TRIGGER ${trigger} ON ${sql.raw(table)}`.execute(db);
      await sql`DROP FUNCTION ${trigger}()`.execute(db);
    };
  }
  await sql`CREATE TRIGGER ${trigger} BEFORE ${on} BEGIN SELECT RAISE(ABORT, ${text}); END`.execute(db);
  return async () => {
    await sql`DROP TRIGGER ${trigger}`.execute(db);
  };
}
