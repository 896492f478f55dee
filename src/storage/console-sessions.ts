// Queries on `console_sessions`: the admin console's signed-in browsers, shared by every
// portal instance on the database. Only the SHA-256 of a session's cookie is stored.
import type { Db } from './database.js';
import type { ConsoleSessionsTable } from './schema.js';

/** How a console session was signed in; another method (single sign-on) adds its own kind. */
export type ConsoleSignIn =
  | { readonly method: 'admin-key'; readonly keyId: string; readonly subject: string }
  | { readonly method: 'secret'; readonly secretDigest: string; readonly subject: string };

export interface StoredConsoleSession {
  readonly sessionHash: string;
  readonly signIn: ConsoleSignIn;
  readonly csrfToken: string;
  readonly createdAt: string;
  readonly lastSeenAt: string;
  readonly expiresAt: string;
}

export async function insertConsoleSession(db: Db, session: StoredConsoleSession): Promise<void> {
  const { signIn } = session;
  await db
    .insertInto('console_sessions')
    .values({
      session_hash: session.sessionHash,
      method: signIn.method,
      key_id: signIn.method === 'admin-key' ? signIn.keyId : null,
      subject: signIn.subject,
      secret_digest: signIn.method === 'secret' ? signIn.secretDigest : null,
      csrf_token: session.csrfToken,
      created_at: session.createdAt,
      last_seen_at: session.lastSeenAt,
      expires_at: session.expiresAt,
    })
    .execute();
}

export async function findConsoleSession(db: Db, sessionHash: string): Promise<StoredConsoleSession | undefined> {
  const row = await db.selectFrom('console_sessions').selectAll().where('session_hash', '=', sessionHash).executeTakeFirst();
  return row === undefined ? undefined : toSession(row);
}

/** Notes a request of the session; skipped when another request noted one after `notBefore`. */
export async function touchConsoleSession(db: Db, sessionHash: string, at: string, notBefore: string): Promise<void> {
  await db.updateTable('console_sessions').set({ last_seen_at: at }).where('session_hash', '=', sessionHash).where('last_seen_at', '<', notBefore).execute();
}

export async function deleteConsoleSession(db: Db, sessionHash: string): Promise<void> {
  await db.deleteFrom('console_sessions').where('session_hash', '=', sessionHash).execute();
}

/** Removes sessions past their absolute end (idle ones are refused when used, and end here too in time). */
export async function deleteEndedConsoleSessions(db: Db, now: string): Promise<void> {
  await db.deleteFrom('console_sessions').where('expires_at', '<=', now).execute();
}

function toSession(row: ConsoleSessionsTable): StoredConsoleSession | undefined {
  const signIn: ConsoleSignIn | undefined =
    row.method === 'admin-key' && row.key_id !== null
      ? { method: 'admin-key', keyId: row.key_id, subject: row.subject }
      : row.method === 'secret' && row.secret_digest !== null
        ? { method: 'secret', secretDigest: row.secret_digest, subject: row.subject }
        : undefined;
  if (signIn === undefined) return undefined;
  return {
    sessionHash: row.session_hash,
    signIn,
    csrfToken: row.csrf_token,
    createdAt: row.created_at,
    lastSeenAt: row.last_seen_at,
    expiresAt: row.expires_at,
  };
}
