// Who is asking, through which Admin API call. The HTTP layer makes one AdminCall per request
// once the caller is known, and hands it to the use case inside its context (PortalContext.call,
// with `events` bound to the call). Use cases read the key's profile limit from it; the events
// seam stamps every change made for the call with it, so the audit listener learns who changed
// what in the change's own transaction (see src/core/events.ts).
import type { AdminScope, KeyScope } from '../protocol/admin-api.js';
import type { ProfileId } from '../shared/ids.js';

/** The name the audit log gives the specification's secret (the bootstrap key with every right). */
export const SECRET_KEY_NAME = 'secret';
/** The secret's lineage (kept answers): its own, apart from every admin key's. */
export const SECRET_KEY_LINEAGE = 'secret';

/** The audit log's name for an OpenID session: `oidc:` and the provider's subject. */
export const OIDC_CALLER_PREFIX = 'oidc:';

/** The key name and source address the audit log gives a change made on the portal host's command line. */
export const COMMAND_LINE_KEY_NAME = '(command line)';
export const COMMAND_LINE_SOURCE = 'local';

/** The key name the audit log gives a change the portal made by itself: a revoked certificate, a device gone from the MDM's inventory. */
export const PORTAL_KEY_NAME = '(portal)';

/**
 * What a caller holds, the measure of the admin key rule: a key it makes never holds more, and
 * it revokes only keys that hold no more (src/core/access/admin-key-calls.ts).
 */
export interface HeldRights {
  readonly scope: KeyScope;
  /** The profiles it is limited to; null: every profile. */
  readonly profiles: readonly ProfileId[] | null;
  /** The addresses it may be used from, besides adminApi.allowList; null: wherever that allows. */
  readonly allowList: readonly string[] | null;
  /** When it stops working (ATOM); null: never. */
  readonly expiresAt: string | null;
}

/** Every right, with no end: the specification's secret, the command line, the portal itself. */
export const EVERY_RIGHT: HeldRights = { scope: 'admin', profiles: null, allowList: null, expiresAt: null };

/** An admin key as its caller holds it: its row's rights, its name and its lineage. */
export interface CallerKey extends HeldRights {
  readonly keyId: string;
  readonly name: string;
  /** Its first key's id, kept by rotations: what kept answers (Idempotency-Key) belong to. */
  readonly lineage: string;
}

/** What a console session signed in with, when not with OpenID Connect. */
export type SessionCredential = { readonly kind: 'secret' } | { readonly kind: 'admin-key'; readonly key: CallerKey };

/**
 * Who is asking, one kind each, so that no code mistakes one for another (the OpenID session
 * for the secret, say): rights, audit name and lineage are read through the functions below.
 */
export type AdminCaller = { readonly sourceAddress: string } & (
  | {
      /** No valid credential; `presentedKeyName` names a genuine key refused (revoked, expired). */
      readonly kind: 'unauthenticated';
      readonly presentedKeyName: string | null;
    }
  /** The specification's secret, as a Bearer token. */
  | { readonly kind: 'secret' }
  /** An admin key (`vpa_…`), as a Bearer token. */
  | { readonly kind: 'admin-key'; readonly key: CallerKey }
  /** A console session signed in with the secret or an admin key: exactly what that holds. */
  | { readonly kind: 'console-session'; readonly signedInWith: SessionCredential }
  /**
   * A console session the OpenID provider vouched for: exactly what its claims granted (no
   * allow-list or end of its own: the session's lifetime bounds the sign-in, not the rights).
   */
  | {
      readonly kind: 'oidc-session';
      readonly subject: string;
      readonly scope: AdminScope;
      readonly profiles: readonly ProfileId[] | null;
    }
  /** A command on the portal host (`vpn-portal admin-key create`): every right. */
  | { readonly kind: 'command-line' }
  /** A change the portal makes by itself (a revoked certificate, a device gone from the MDM). */
  | { readonly kind: 'portal' }
);

/** What the caller holds; null: nothing (no valid credential). */
export function heldRights(caller: AdminCaller): HeldRights | null {
  switch (caller.kind) {
    case 'unauthenticated':
      return null;
    case 'secret':
    case 'command-line':
    case 'portal':
      return EVERY_RIGHT;
    case 'admin-key':
      return caller.key;
    case 'console-session':
      return caller.signedInWith.kind === 'secret' ? EVERY_RIGHT : caller.signedInWith.key;
    case 'oidc-session':
      return { scope: caller.scope, profiles: caller.profiles, allowList: null, expiresAt: null };
  }
}

/** The admin key the caller acts with (directly or through a console session); null for any other kind. */
export function callerKey(caller: AdminCaller): CallerKey | null {
  if (caller.kind === 'admin-key') return caller.key;
  if (caller.kind === 'console-session' && caller.signedInWith.kind === 'admin-key') return caller.signedInWith.key;
  return null;
}

/** The caller's scope; null: no valid credential. */
export function callerScope(caller: AdminCaller): KeyScope | null {
  return heldRights(caller)?.scope ?? null;
}

/** The profiles the caller is limited to; null: every profile (or no valid credential, which reaches nothing). */
export function callerProfiles(caller: AdminCaller): readonly ProfileId[] | null {
  return heldRights(caller)?.profiles ?? null;
}

/** The name the audit log gives the caller; null: no valid credential and no genuine key named. */
export function callerName(caller: AdminCaller): string | null {
  switch (caller.kind) {
    case 'unauthenticated':
      return caller.presentedKeyName;
    case 'secret':
      return SECRET_KEY_NAME;
    case 'admin-key':
      return caller.key.name;
    case 'console-session':
      return caller.signedInWith.kind === 'secret' ? SECRET_KEY_NAME : caller.signedInWith.key.name;
    case 'oidc-session':
      return `${OIDC_CALLER_PREFIX}${caller.subject}`;
    case 'command-line':
      return COMMAND_LINE_KEY_NAME;
    case 'portal':
      return PORTAL_KEY_NAME;
  }
}

/**
 * What kept answers (Idempotency-Key) belong to: the key's lineage, `secret` for the secret;
 * null for callers that keep none (no credential, OpenID sessions, the command line, the portal).
 */
export function callerLineage(caller: AdminCaller): string | null {
  if (caller.kind === 'secret' || (caller.kind === 'console-session' && caller.signedInWith.kind === 'secret'))
    return SECRET_KEY_LINEAGE;
  return callerKey(caller)?.lineage ?? null;
}

/** A caller that presented no valid credential; `presentedKeyName` names a genuine key refused. */
export function unauthenticatedCaller(sourceAddress: string, presentedKeyName: string | null = null): AdminCaller {
  return { kind: 'unauthenticated', presentedKeyName, sourceAddress };
}

export interface AdminCall {
  readonly caller: AdminCaller;
  /** The call's name (`create`), or the path asked for when it names no call. */
  readonly name: string;
  /** The parameters as sent, of the names the call takes. The Admin API takes no secret. */
  readonly parameters: Readonly<Record<string, string>>;
  /** The status the call answers when it succeeds: what a change recorded in its transaction answered. */
  readonly successStatus: number;
}

/** The profiles a call may touch; null: every profile. */
export function profileLimit(call: AdminCall | undefined): ReadonlySet<ProfileId> | null {
  const profiles = call === undefined ? null : callerProfiles(call.caller);
  return profiles === null ? null : new Set(profiles);
}

/** How a key is named in refusals. */
export function describeKey(call: AdminCall): string {
  return describeCaller(call.caller);
}

/** How a caller is named in refusals: `key "desk"`, `oidc:alice`, `this key` when unnamed. */
export function describeCaller(caller: AdminCaller): string {
  const name = callerName(caller);
  if (name === null) return 'this key';
  return caller.kind === 'oidc-session' ? name : `key "${name}"`;
}

/**
 * A command run on the portal host (`vpn-portal admin-key create`) as the audit log records it:
 * no key (the command works on the database and DATA/keys directly), every right, from `local`.
 */
export function commandLineCall(name: string, parameters: Readonly<Record<string, string>>): AdminCall {
  return {
    caller: { kind: 'command-line', sourceAddress: COMMAND_LINE_SOURCE },
    name,
    parameters,
    successStatus: 200,
  };
}

/** A change the portal makes on its own (no key, every right, from `local`), as the audit log records it. */
export function portalCall(name: string, parameters: Readonly<Record<string, string>>): AdminCall {
  return {
    caller: { kind: 'portal', sourceAddress: COMMAND_LINE_SOURCE },
    name,
    parameters,
    successStatus: 200,
  };
}
