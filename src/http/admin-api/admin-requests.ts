// What the portal knows about one Admin API request while it runs: who asks (set by the guard
// once the key is checked, or refused), the events view bound to the call (so the audit
// listener records a change with its caller), and a note for the audit log. As an answer
// leaves, src/http/admin-api/surface.ts reads it to record the calls that changed nothing: refused,
// failed, replayed, or with nothing to do.
import type { FastifyRequest } from 'fastify';
import type { AdminCaller } from '../../core/admin-call.js';
import type { PortalEvents } from '../../core/events.js';
import { IDEMPOTENCY_KEY_HEADER } from '../../protocol/admin-api.js';
import { sha256Hex } from '../../shared/sha256.js';

/** Longer parameter values (a CSR) are recorded by length and digest (user ids are at most 255 characters). */
const MAX_AUDITED_VALUE = 255;
/** The parameters that take a URL (create_webhook's `url`): recorded without a user name or password. */
const URL_PARAMETERS: ReadonlySet<string> = new Set(['url']);

export interface AdminRequestState {
  readonly caller: AdminCaller;
  /** Why the request was refused or what happened to it, for the audit log (the client may be told less). */
  detail?: string;
  /** The events view bound to the call, once the call runs. */
  events?: PortalEvents;
}

export class AdminRequests {
  readonly #states = new WeakMap<FastifyRequest, AdminRequestState>();

  set(request: FastifyRequest, state: AdminRequestState): AdminRequestState {
    this.#states.set(request, state);
    return state;
  }

  get(request: FastifyRequest): AdminRequestState | undefined {
    return this.#states.get(request);
  }
}

/**
 * The parameters of a call as the audit log shows them: the names the call takes, with the
 * values as sent (text only; one longer than 255 characters, such as a CSR, as its length and
 * SHA-256, and so is one with a NUL character, which PostgreSQL cannot store in text: its row
 * would be lost there, and kept on SQLite it would stop a `db copy` to PostgreSQL), and the
 * Idempotency-Key. The Admin API takes no secret as a parameter; a file or a private key is
 * never among them, and a URL's user name and password (which create_webhook refuses, a refusal
 * that is recorded too) are left out of it.
 */
export function auditedParameters(
  names: readonly string[],
  input: unknown,
  request: FastifyRequest,
): Record<string, string> {
  const parameters = Object.fromEntries(
    Object.entries(sentParameters(names, input)).map(([name, sent]) => {
      const value = URL_PARAMETERS.has(name) ? withoutUserInfo(sent) : sent;
      return [name, value.length <= MAX_AUDITED_VALUE && !value.includes('\u0000') ? value : digestOf(value)];
    }),
  );
  const idempotencyKey = request.headers[IDEMPOTENCY_KEY_HEADER.toLowerCase()];
  if (typeof idempotencyKey === 'string')
    parameters[IDEMPOTENCY_KEY_HEADER] = idempotencyKey.slice(0, MAX_AUDITED_VALUE);
  return parameters;
}

/** A URL without the user name and password it carries (`https://me:pw@host/` → `https://host/`). */
function withoutUserInfo(value: string): string {
  // Text no URL parser reads (a space in the host) loses what stands before an `@` in its authority.
  if (!URL.canParse(value)) return value.replace(/^([^:/?#]*:[/\\]*)[^/?#\\]*@/, '$1');
  // Else the reading create_webhook's own check makes (new URL): whatever it finds is removed.
  const url = new URL(value);
  if (url.username === '' && url.password === '') return value;
  url.username = '';
  url.password = '';
  return url.href;
}

function digestOf(value: string): string {
  return `[${value.length} characters, SHA-256 ${sha256Hex(value)}]`;
}

/** The parameters as sent, in full, of the names the call takes: what a retry must repeat (Idempotency-Key). */
export function sentParameters(names: readonly string[], input: unknown): Record<string, string> {
  const values = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  const parameters: Record<string, string> = {};
  for (const name of names) {
    const value = Object.hasOwn(values, name) ? values[name] : undefined;
    if (typeof value === 'string') parameters[name] = value;
  }
  return parameters;
}
