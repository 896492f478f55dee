// Sessions of the admin console: signing in with an admin key or the Admin API
// secret, or through OpenID Connect single sign-on, and checking a session on every request. A session has exactly the rights of what it
// signed in with (scope, profile limits, the key's own allow-list), checked afresh each time from
// the key's row (and the pepper it is checked under), so a revoked or expired key ends its
// sessions at once on every instance. The
// sign-in methods are a union (`ConsoleSignIn`): single sign-on would be one more member, with
// its own check here, and the rest of the console unchanged.
import { randomBytes } from 'node:crypto';
import { ADMIN_KEY_PREFIX } from '../../keys/admin-key-token.js';
import { constantTimeEquals } from '../../shared/constant-time.js';
import { messageOf } from '../../shared/error-message.js';
import { formatAtom } from '../../shared/time.js';
import {
  deleteConsoleSession,
  deleteEndedConsoleSessions,
  findConsoleSession,
  insertConsoleSession,
  touchConsoleSession,
  type ConsoleSignIn,
  type StoredConsoleSession,
} from '../../storage/console-sessions.js';
import { findAdminKey, type StoredAdminKey } from '../../storage/admin-keys.js';
import { OIDC_CALLER_PREFIX, SECRET_KEY_NAME, unauthenticatedCaller, type AdminCaller } from '../admin-call.js';
import { callerKeyOf, checkAdminKey, recordAdminCall, type OidcGrant } from '../access/index.js';
import type { PortalContext } from '../context.js';
import type { ConsoleOidcSettings } from '../../config/console-oidc.js';
import { sha256Hex } from '../../shared/sha256.js';

export type { ConsoleSignIn } from '../../storage/console-sessions.js';

/** How often a session's "last seen" is written at most: idle expiry is this coarse, and reads stay reads. */
const TOUCH_INTERVAL_MS = 30_000;

/** The call name the audit log gives a console sign-in. */
export const CONSOLE_SIGN_IN_CALL = 'console/sign_in';

export interface ConsoleSession {
  /** The cookie's value: given to the browser once, only its SHA-256 is stored. */
  readonly token: string;
  readonly csrfToken: string;
  readonly expiresAt: Date;
}

export type SignInResult =
  | { readonly ok: true; readonly session: ConsoleSession }
  | { readonly ok: false; readonly reason: string };

/** A session found valid: who it acts as (for the call's context) and its CSRF token. */
export interface ActiveConsoleSession {
  readonly sessionHash: string;
  readonly caller: AdminCaller;
  readonly csrfToken: string;
  readonly signIn: ConsoleSignIn;
}

export type SessionCheck =
  | { readonly valid: true; readonly session: ActiveConsoleSession }
  | { readonly valid: false; readonly reason: string };

/** How long sessions last, and whether an address is on an admin key's own allow-list (the HTTP layer's rule). */
export interface ConsoleSessionTimes {
  readonly idleTimeoutMs: number;
  readonly sessionLifetimeMs: number;
  readonly addressAllowed: (allowList: readonly string[], address: string) => boolean;
}

/**
 * Signs in with an admin key (`vpa_…`) or the Admin API secret. A refusal is recorded in the
 * audit log (with the key's name when the key was genuine but revoked or expired) and answered
 * with one line a person can act on.
 */
export async function signIn(
  ctx: PortalContext,
  presented: string,
  sourceAddress: string,
  times: ConsoleSessionTimes,
): Promise<SignInResult> {
  const credential = presented.trim();
  const refuse = async (reason: string, keyName: string | null, shown: string): Promise<SignInResult> => {
    const caller = unauthenticatedCaller(sourceAddress, keyName);
    await recordAdminCall(ctx, { caller, name: CONSOLE_SIGN_IN_CALL, parameters: {}, successStatus: 200 }, 403, reason);
    return { ok: false, reason: shown };
  };
  let signIn: ConsoleSignIn;
  let caller: AdminCaller;
  if (credential.startsWith(ADMIN_KEY_PREFIX)) {
    const check = await checkAdminKey(ctx, credential);
    if (!check.valid)
      return refuse(
        check.reason,
        check.keyName,
        check.keyName === null ? 'This is not a valid admin key.' : `${capitalised(check.reason)}.`,
      );
    const { key } = check;
    if (key.allowList !== null && !times.addressAllowed(key.allowList, sourceAddress)) {
      const reason = `source address ${sourceAddress} is not allowed for key "${key.name}"`;
      return refuse(reason, key.name, `${capitalised(reason)}.`);
    }
    // A SCIM key is for a directory's provisioning client: the console would offer it nothing.
    if (key.scope === 'scim')
      return refuse(
        `key "${key.name}" has scope "scim"`,
        key.name,
        'A key of scope "scim" is for SCIM provisioning only.',
      );
    // The key stops working under another pepper; the session keeps what ends it with the key.
    const pepperDigest = ctx.keys.adminKeySessionDigest(key.keyId);
    if (pepperDigest === null)
      return refuse(
        `no admin key pepper (${ctx.keys.adminKeyPepperPath})`,
        key.name,
        `The portal cannot keep a session of this key: ${ctx.keys.adminKeyPepperPath} is not 64 hex characters.`,
      );
    signIn = { method: 'admin-key', keyId: key.keyId, subject: key.name, pepperDigest };
    caller = keySessionCaller(key, sourceAddress);
  } else {
    if (!ctx.keys.adminApiEnabled())
      return refuse(
        'Admin API secret not set',
        null,
        'The Admin API secret is not set on this portal; sign in with an admin key.',
      );
    if (credential === '' || !ctx.keys.adminApiKeyMatches(credential))
      return refuse('wrong secret', null, 'This is neither an admin key nor the Admin API secret.');
    // The session keeps a keyed digest of the secret (the admin key pepper, made on first use).
    try {
      ctx.keys.createAdminKeyPepper();
    } catch (error) {
      return refuse(
        `cannot make ${ctx.keys.adminKeyPepperPath}: ${messageOf(error)}`,
        null,
        `The portal cannot keep a session of the Admin API secret: ${ctx.keys.adminKeyPepperPath} cannot be made.`,
      );
    }
    const digest = ctx.keys.adminApiSecretDigest();
    if (digest === null)
      return refuse(
        `no admin key pepper (${ctx.keys.adminKeyPepperPath})`,
        null,
        `The portal cannot keep a session of the Admin API secret: ${ctx.keys.adminKeyPepperPath} is not 64 hex characters.`,
      );
    signIn = { method: 'secret', secretDigest: digest, subject: SECRET_KEY_NAME };
    caller = secretCaller(sourceAddress);
  }
  return openSession(ctx, signIn, caller, times);
}

/**
 * Signs in an account the OpenID provider vouched for (src/http/console/oidc.ts checked the
 * flow and mapped its claims to `grant`): the session acts as `oidc:<subject>` with the scope
 * and profiles the claims granted, fixed until it ends.
 */
export async function signInWithOidc(
  ctx: PortalContext,
  grant: OidcGrant,
  sourceAddress: string,
  times: ConsoleSessionTimes,
): Promise<SignInResult> {
  const settings = ctx.config.adminConsole.oidc;
  if (settings === null)
    return refuseOidcSignIn(ctx, grant.subject, 'Single sign-on is turned off on this portal.', sourceAddress);
  const signIn: ConsoleSignIn = {
    method: 'oidc',
    subject: grant.subject,
    scope: grant.scope,
    profiles: grant.profiles,
    rulesDigest: oidcRulesDigest(settings),
  };
  return openSession(ctx, signIn, oidcCaller(signIn, sourceAddress), times);
}

/** Records a refused single sign-on (as `oidc:<subject>` when the provider named one) and answers its line. */
export async function refuseOidcSignIn(
  ctx: PortalContext,
  subject: string | null,
  reason: string,
  sourceAddress: string,
): Promise<SignInResult> {
  const keyName = subject === null ? null : `${OIDC_CALLER_PREFIX}${subject}`;
  const caller = unauthenticatedCaller(sourceAddress, keyName);
  await recordAdminCall(ctx, { caller, name: CONSOLE_SIGN_IN_CALL, parameters: {}, successStatus: 200 }, 403, reason);
  return { ok: false, reason };
}

/**
 * Records a sign-in the throttle refused unchecked (429): a client still trying after its
 * failures is told in the audit log, as the Admin API's refusals are, one row per minute.
 */
export async function recordThrottledSignIn(ctx: PortalContext, sourceAddress: string): Promise<void> {
  const caller = unauthenticatedCaller(sourceAddress, null);
  const call = { caller, name: CONSOLE_SIGN_IN_CALL, parameters: {}, successStatus: 200 };
  await recordAdminCall(ctx, call, 429, 'too many failed sign-ins from this address: not checked');
}

/** A new session for a credential found good: its cookie and CSRF token, its row, its audit row. */
async function openSession(
  ctx: PortalContext,
  signIn: ConsoleSignIn,
  caller: AdminCaller,
  times: ConsoleSessionTimes,
): Promise<SignInResult> {
  const now = ctx.clock.now();
  const token = randomBytes(32).toString('base64url');
  const csrfToken = randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + times.sessionLifetimeMs);
  await deleteEndedConsoleSessions(ctx.db, formatAtom(now));
  await insertConsoleSession(ctx.db, {
    sessionHash: hashOf(token),
    signIn,
    csrfToken,
    createdAt: formatAtom(now),
    lastSeenAt: formatAtom(now),
    expiresAt: formatAtom(expiresAt),
  });
  await recordAdminCall(ctx, { caller, name: CONSOLE_SIGN_IN_CALL, parameters: {}, successStatus: 200 }, 200, null);
  return { ok: true, session: { token, csrfToken, expiresAt } };
}

/**
 * Checks the session a cookie names: known, not idle too long, not past its lifetime, and what
 * it signed in with still valid (the key neither revoked nor expired and the address on its
 * allow-list; the secret unchanged). An ended session is deleted.
 */
export async function checkSession(
  ctx: PortalContext,
  token: string,
  sourceAddress: string,
  times: ConsoleSessionTimes,
): Promise<SessionCheck> {
  const sessionHash = hashOf(token);
  const stored = await findConsoleSession(ctx.db, sessionHash);
  if (stored === undefined) return { valid: false, reason: 'Your session has ended; sign in again.' };
  const now = ctx.clock.now();
  const ended = await endReason(ctx, stored, sourceAddress, now, times);
  if (typeof ended === 'string') {
    await deleteConsoleSession(ctx.db, sessionHash);
    return { valid: false, reason: ended };
  }
  // Also when last seen later than now (the clock was set back since): else the idle time would
  // be counted from that later moment, stretched by as far as the clock went back.
  const sinceSeen = now.getTime() - Date.parse(stored.lastSeenAt);
  if (sinceSeen >= TOUCH_INTERVAL_MS || sinceSeen < 0) {
    await touchConsoleSession(
      ctx.db,
      sessionHash,
      formatAtom(now),
      formatAtom(new Date(now.getTime() - TOUCH_INTERVAL_MS)),
    );
  }
  return { valid: true, session: { sessionHash, caller: ended, csrfToken: stored.csrfToken, signIn: stored.signIn } };
}

/** Ends the session of `token`; answers how it was begun (null: no such session). */
export async function signOut(ctx: PortalContext, token: string): Promise<ConsoleSignIn['method'] | null> {
  const sessionHash = hashOf(token);
  const stored = await findConsoleSession(ctx.db, sessionHash);
  await deleteConsoleSession(ctx.db, sessionHash);
  return stored?.signIn.method ?? null;
}

/** Why the session ended, or the caller it acts as. */
async function endReason(
  ctx: PortalContext,
  stored: StoredConsoleSession,
  sourceAddress: string,
  now: Date,
  times: ConsoleSessionTimes,
): Promise<string | AdminCaller> {
  // The lifetime as configured now also bounds a session begun under a longer one: shortening
  // `adminConsole.sessionLifetime` ends the sessions it no longer allows. A longer one extends none.
  const end = Math.min(Date.parse(stored.expiresAt), Date.parse(stored.createdAt) + times.sessionLifetimeMs);
  if (end <= now.getTime()) return 'Your session reached its end; sign in again.';
  if (now.getTime() - Date.parse(stored.lastSeenAt) >= times.idleTimeoutMs)
    return 'Your session ended after a time without use; sign in again.';
  const { signIn } = stored;
  if (signIn.method === 'oidc') {
    // Turning single sign-on off ends its sessions, and so does a change of the rules that granted
    // their rights (a scope a mapping gave by mistake, taken back); the claims are not asked again.
    const settings = ctx.config.adminConsole.oidc;
    if (settings === null) return 'Single sign-on is turned off on this portal; sign in again.';
    if (oidcRulesDigest(settings) !== signIn.rulesDigest)
      return 'Single sign-on grants by other rules (adminConsole.oidc) than when you signed in; sign in again.';
    return oidcCaller(signIn, sourceAddress);
  }
  if (signIn.method === 'secret') {
    const digest = ctx.keys.adminApiSecretDigest();
    if (digest === null)
      return ctx.keys.adminApiEnabled()
        ? `This portal instance cannot read ${ctx.keys.adminKeyPepperPath} (every instance needs the same file); sign in again.`
        : 'The Admin API secret was removed; sign in again.';
    return constantTimeEquals(digest, signIn.secretDigest)
      ? secretCaller(sourceAddress)
      : 'The Admin API secret changed; sign in again.';
  }
  const key = await findAdminKey(ctx.db, signIn.keyId);
  if (key === undefined) return `Admin key "${signIn.subject}" no longer exists; sign in again.`;
  if (key.revokedAt !== null) return `Admin key "${key.name}" was revoked at ${key.revokedAt}; your session ended.`;
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= now.getTime())
    return `Admin key "${key.name}" expired at ${key.expiresAt}; your session ended.`;
  // The Admin API checks a key under the pepper as it is now: another one (or none) refuses it.
  if (signIn.pepperDigest === null) return 'Your session began before this version of the portal; sign in again.';
  const pepperDigest = ctx.keys.adminKeySessionDigest(key.keyId);
  if (pepperDigest === null || !constantTimeEquals(pepperDigest, signIn.pepperDigest))
    return `Admin key "${key.name}" is not valid under ${ctx.keys.adminKeyPepperPath} as it is now; sign in again.`;
  if (key.allowList !== null && !times.addressAllowed(key.allowList, sourceAddress)) {
    return `Source address ${sourceAddress} is not allowed for key "${key.name}".`;
  }
  return keySessionCaller(key, sourceAddress);
}

/** A session signed in with an admin key: exactly what the key's row holds. */
function keySessionCaller(key: StoredAdminKey, sourceAddress: string): AdminCaller {
  return { kind: 'console-session', signedInWith: { kind: 'admin-key', key: callerKeyOf(key) }, sourceAddress };
}

/** A session from OpenID Connect: exactly what its claims granted at sign-in. */
function oidcCaller(signIn: Extract<ConsoleSignIn, { method: 'oidc' }>, sourceAddress: string): AdminCaller {
  return {
    kind: 'oidc-session',
    subject: signIn.subject,
    scope: signIn.scope,
    profiles: signIn.profiles,
    sourceAddress,
  };
}

/**
 * What an OpenID session's rights rest on: whose accounts (issuer, client) and how their claims
 * grant a scope and profiles. Not the button's name, the client secret or the scopes asked for.
 */
function oidcRulesDigest(settings: ConsoleOidcSettings): string {
  const { issuer, clientId, scope, profiles } = settings;
  const rules = [
    issuer.href,
    clientId,
    [scope.claim, scope.read, scope.write, scope.admin],
    profiles === null ? null : [profiles.claim, profiles.values],
  ];
  return sha256Hex(JSON.stringify(rules));
}

function secretCaller(sourceAddress: string): AdminCaller {
  return { kind: 'console-session', signedInWith: { kind: 'secret' }, sourceAddress };
}

function hashOf(token: string): string {
  return sha256Hex(token);
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
