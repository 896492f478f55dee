// Failures the use cases report. Each code has one HTTP status (src/http/plumbing/error-reply.ts);
// the message is written for the person who made the request.

export type PortalErrorCode =
  | 'no-such-profile'
  | 'no-such-user'
  /** /extend: the user has no configuration with that connection_id (404). */
  | 'no-such-configuration'
  /** An enrollment token id nobody made (or whose user was destroyed) (404). */
  | 'no-such-token'
  | 'user-disabled'
  | 'unsupported-expiry'
  | 'invalid-parameter'
  | 'no-common-protocol'
  | 'addresses-exhausted'
  | 'unavailable'
  /** No revocation receipt with this id the key may see (404). */
  | 'no-such-revocation'
  /** No registered device has this id (or serial, or mdm_id) (404). */
  | 'no-such-device'
  /** No session held the address asked about at that moment, or no node mapped it to a client (404). */
  | 'no-such-session'
  /** No webhook subscription has this id (404). */
  | 'no-such-webhook'
  /** No legal hold has this id (404). */
  | 'no-such-legal-hold'
  /** No admin key of this name that is not revoked already (404). */
  | 'no-such-admin-key'
  /** The admin key may not touch this profile or user (403). */
  | 'not-allowed'
  /** The request contradicts what is stored: a public key in use, a configuration that cannot be extended (409). */
  | 'conflict'
  /** An enrollment token that cannot be used any more: expired, used up, revoked or unknown (410). */
  | 'gone';

export class PortalError extends Error {
  override readonly name = 'PortalError';

  constructor(
    readonly code: PortalErrorCode,
    message: string,
  ) {
    super(message);
  }
}
