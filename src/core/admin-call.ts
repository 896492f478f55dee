// Who is asking, through which Admin API call. The HTTP layer makes one AdminCall per request
// once the caller is known, and hands it to the use case inside its context (PortalContext.call,
// with `events` bound to the call). Use cases read the key's profile limit from it; the events
// seam stamps every change made for the call with it, so the audit listener learns who changed
// what in the change's own transaction (see src/core/events.ts).
import type { AdminScope } from '../protocol/admin-api.js';
import type { ProfileId } from '../shared/ids.js';

/** The name the audit log gives the specification's secret (the bootstrap key with every right). */
export const SECRET_KEY_NAME = 'secret';
/** The secret's lineage (kept answers): its own, apart from every admin key's. */
export const SECRET_KEY_LINEAGE = 'secret';

/** The key name and source address the audit log gives a change made on the portal host's command line. */
export const COMMAND_LINE_KEY_NAME = '(command line)';
export const COMMAND_LINE_SOURCE = 'local';

export interface AdminCaller {
  /** The admin key's name, `secret` for the specification's secret, null when no valid key was presented. */
  readonly keyName: string | null;
  /** The admin key's id; null for the secret or no key. */
  readonly keyId: string | null;
  /**
   * The admin key's lineage (its first key's id, kept by rotations), `secret` for the secret,
   * null when no valid key was presented: what kept answers (Idempotency-Key) belong to.
   */
  readonly keyLineage: string | null;
  /** null when no valid key was presented. */
  readonly scope: AdminScope | null;
  /** The client's address (the one a trusted proxy forwarded, else the peer's). */
  readonly sourceAddress: string;
  /** The profiles the key is limited to; null: every profile. */
  readonly profiles: readonly ProfileId[] | null;
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
  const profiles = call?.caller.profiles ?? null;
  return profiles === null ? null : new Set(profiles);
}

/** How a key is named in refusals. */
export function describeKey(call: AdminCall): string {
  return call.caller.keyName === null ? 'this key' : `key "${call.caller.keyName}"`;
}

/**
 * A command run on the portal host (`vpn-portal admin-key create`) as the audit log records it:
 * no key (the command works on the database and DATA/keys directly), every right, from `local`.
 */
export function commandLineCall(name: string, parameters: Readonly<Record<string, string>>): AdminCall {
  return {
    caller: {
      keyName: COMMAND_LINE_KEY_NAME,
      keyId: null,
      keyLineage: null,
      scope: 'admin',
      sourceAddress: COMMAND_LINE_SOURCE,
      profiles: null,
    },
    name,
    parameters,
    successStatus: 200,
  };
}

/** The key name the audit log gives a change the portal made by itself: a revoked certificate, a device gone from the MDM's inventory. */
export const PORTAL_KEY_NAME = '(portal)';

/** A change the portal makes on its own (no key, every right, from `local`), as the audit log records it. */
export function portalCall(name: string, parameters: Readonly<Record<string, string>>): AdminCall {
  return {
    caller: {
      keyName: PORTAL_KEY_NAME,
      keyId: null,
      keyLineage: null,
      scope: 'admin',
      sourceAddress: COMMAND_LINE_SOURCE,
      profiles: null,
    },
    name,
    parameters,
    successStatus: 200,
  };
}
