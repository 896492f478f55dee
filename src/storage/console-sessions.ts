// Queries on `console_sessions`: the admin console's signed-in browsers, shared by every
// portal instance on the database. Only the SHA-256 of a session's cookie is stored.
import { z } from 'zod';
import { ADMIN_SCOPES, type AdminScope } from '../protocol/admin-api.js';
import { asProfileId, type ProfileId } from '../shared/ids.js';
import type { Db } from './database.js';
import type { ConsoleSessionsTable } from './schema.js';

/** How a console session was signed in; another method (single sign-on) adds its own kind. */
export type ConsoleSignIn =
  /**
   * `pepperDigest`: the key's id under the admin key pepper it was checked with (kept in
   * `secret_digest`); null for a session from before it was kept.
   */
  | {
      readonly method: 'admin-key';
      readonly keyId: string;
      readonly subject: string;
      readonly pepperDigest: string | null;
    }
  | { readonly method: 'secret'; readonly secretDigest: string; readonly subject: string }
  /**
   * OpenID Connect: `subject` is the provider's `sub`; the rights its claims granted at sign-in,
   * and a digest of the `adminConsole.oidc` rules that granted them.
   */
  | {
      readonly method: 'oidc';
      readonly subject: string;
      readonly scope: AdminScope;
      readonly profiles: readonly ProfileId[] | null;
      readonly rulesDigest: string;
    };

const oidcScope = z.enum(ADMIN_SCOPES);
const profileList = z.array(z.string());

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
      secret_digest:
        signIn.method === 'secret' ? signIn.secretDigest : signIn.method === 'admin-key' ? signIn.pepperDigest : null,
      scope: signIn.method === 'oidc' ? signIn.scope : null,
      profiles: signIn.method === 'oidc' && signIn.profiles !== null ? JSON.stringify(signIn.profiles) : null,
      oidc_rules_digest: signIn.method === 'oidc' ? signIn.rulesDigest : null,
      csrf_token: session.csrfToken,
      created_at: session.createdAt,
      last_seen_at: session.lastSeenAt,
      expires_at: session.expiresAt,
    })
    .execute();
}

export async function findConsoleSession(db: Db, sessionHash: string): Promise<StoredConsoleSession | undefined> {
  const row = await db
    .selectFrom('console_sessions')
    .selectAll()
    .where('session_hash', '=', sessionHash)
    .executeTakeFirst();
  return row === undefined ? undefined : toSession(row);
}

/**
 * Notes a request of the session; skipped when another request noted one after `notBefore`,
 * unless that one is dated after `at` (the clock was set back since).
 */
export async function touchConsoleSession(db: Db, sessionHash: string, at: string, notBefore: string): Promise<void> {
  await db
    .updateTable('console_sessions')
    .set({ last_seen_at: at })
    .where('session_hash', '=', sessionHash)
    .where((where) => where.or([where('last_seen_at', '<', notBefore), where('last_seen_at', '>', at)]))
    .execute();
}

export async function deleteConsoleSession(db: Db, sessionHash: string): Promise<void> {
  await db.deleteFrom('console_sessions').where('session_hash', '=', sessionHash).execute();
}

/** Removes sessions past their absolute end (idle ones are refused when used, and end here too in time). */
export async function deleteEndedConsoleSessions(db: Db, now: string): Promise<void> {
  await db.deleteFrom('console_sessions').where('expires_at', '<=', now).execute();
}

function toSession(row: ConsoleSessionsTable): StoredConsoleSession | undefined {
  const signIn = signInOf(row);
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

/** A row of an unknown method, or missing what its method needs, is no session. */
function signInOf(row: ConsoleSessionsTable): ConsoleSignIn | undefined {
  if (row.method === 'admin-key' && row.key_id !== null)
    return { method: 'admin-key', keyId: row.key_id, subject: row.subject, pepperDigest: row.secret_digest };
  if (row.method === 'secret' && row.secret_digest !== null)
    return { method: 'secret', secretDigest: row.secret_digest, subject: row.subject };
  const scope = oidcScope.safeParse(row.scope);
  if (row.method === 'oidc' && scope.success && row.oidc_rules_digest !== null) {
    const profiles = row.profiles === null ? null : profileList.parse(JSON.parse(row.profiles)).map(asProfileId);
    return { method: 'oidc', subject: row.subject, scope: scope.data, profiles, rulesDigest: row.oidc_rules_digest };
  }
  return undefined;
}
