// Console sessions signed in with the Admin API secret kept a plain SHA-256 of the secret, which a
// copy of the database lets anyone test guesses against (a secret an administrator chose may be
// guessable). They now keep an HMAC under the admin key pepper; the old rows could never match
// it, so they are ended here: those administrators sign in again once.
import type { Kysely, Migration } from 'kysely';

export const consoleSecretSessionsKeyed: Migration = {
  async up(untyped: Kysely<unknown>): Promise<void> {
    // The table is known here; the migration is written against the rows as they are.
    const db = untyped as Kysely<{ console_sessions: { method: string } }>;
    await db.deleteFrom('console_sessions').where('method', '=', 'secret').execute();
  },
};
