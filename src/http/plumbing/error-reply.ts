// Every error leaves the portal as JSON `{"error": "..."}` with a precise status; bad input
// is never a 5xx and no stack trace is ever sent.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { PortalError, type PortalErrorCode } from '../../core/errors.js';
import { storageOutage, type StorageOutage } from '../../storage/errors.js';
import { HttpError } from './http-error.js';

const STATUS_OF: Readonly<Record<PortalErrorCode, number>> = {
  'no-such-profile': 404,
  'no-such-webhook': 404,
  'no-such-admin-key': 404,
  'no-such-legal-hold': 404,
  'no-such-revocation': 404,
  'no-such-device': 404,
  'no-such-session': 404,
  'no-such-user': 400,
  'no-such-configuration': 404,
  'no-such-token': 404,
  'user-disabled': 403,
  'unsupported-expiry': 400,
  'invalid-parameter': 400,
  'no-common-protocol': 406,
  'addresses-exhausted': 503,
  unavailable: 503,
  'not-allowed': 403,
  conflict: 409,
  gone: 410,
};

/** Fastify's own request errors, translated to messages a person can act on. */
const FRAMEWORK_ERRORS: Readonly<Record<string, { status: number; message: string }>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, message: 'request body too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    message: 'unsupported Content-Type, send application/x-www-form-urlencoded',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, message: 'Content-Length does not match the body' },
  FST_ERR_CTP_EMPTY_TYPE: { status: 415, message: 'empty Content-Type, send application/x-www-form-urlencoded' },
  FST_ERR_CTP_INVALID_TYPE: { status: 415, message: 'invalid Content-Type, send application/x-www-form-urlencoded' },
};

/** What a client is told about a database outage; the log has the driver's error and its code. */
/**
 * What an outage's 503 says, and when to try again (Retry-After, seconds): a database that was
 * busy or away (a restart, a lock held) is usually back in moments; a full disk or a database
 * that cannot be written waits for someone to act.
 */
const OUTAGE_MESSAGES: Readonly<
  Record<StorageOutage, { readonly log: string; readonly reply: string; readonly retryAfter: number }>
> = {
  full: { log: 'database full', reply: 'database full, try again later', retryAfter: 60 },
  'read-only': { log: 'database read-only', reply: 'database read-only, try again later', retryAfter: 60 },
  unavailable: { log: 'database unavailable', reply: 'database unavailable, try again later', retryAfter: 5 },
};

/** Requests answered 503 because the database could not serve them (full, read-only, unavailable). */
const answeredForOutage = new WeakSet<FastifyRequest>();

/** What a client is told of a failure the portal did not expect; the log has the error. */
export const INTERNAL_ERROR_MESSAGE = 'internal error; the portal log has the details';

/** The HTTP status a use case's refusal is answered with. */
export function statusOfPortalError(error: PortalError): number {
  return STATUS_OF[error.code];
}

/**
 * True when an error is answered 503 for a database outage (full, read-only, unavailable) rather
 * than 500: nothing more is asked of the database for it, not even its audit row.
 */
export function isDatabaseOutage(error: unknown): boolean {
  return storageOutage(error) !== null;
}

/**
 * True when the request was answered 503 for a database outage: nothing more is asked of the
 * database for it (the audit log would fail the same way, and wait as long again).
 */
export function wasDatabaseOutage(request: FastifyRequest): boolean {
  return answeredForOutage.has(request);
}

export function sendError(
  reply: FastifyReply,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): FastifyReply {
  return reply
    .code(status)
    .headers(headers)
    .type('application/json')
    .send(JSON.stringify({ error: message }));
}

/** What an error is answered with, whatever the format: its status, a message a client may see, and headers. */
export interface ErrorAnswer {
  readonly status: number;
  readonly message: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Set when the answer is a 503 because the database cannot serve the request now. */
  readonly outage: StorageOutage | null;
}

/**
 * How an error is answered, logged as it deserves; shared by the JSON surfaces (handleError)
 * and the console, which shows the same answer as a page.
 */
export function errorAnswer(error: FastifyError | Error, request: FastifyRequest): ErrorAnswer {
  const answer = (status: number, message: string, headers: Readonly<Record<string, string>> = {}): ErrorAnswer => ({
    status,
    message,
    headers,
    outage: null,
  });
  if (error instanceof HttpError) return answer(error.statusCode, error.message, { ...error.headers });
  if (error instanceof PortalError) return answer(STATUS_OF[error.code], error.message);
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    const known = FRAMEWORK_ERRORS[code];
    if (known !== undefined) return answer(known.status, known.message);
  }
  // A client error Fastify met while reading the request, before any storage error: a client
  // that hangs up halfway through its body is ECONNRESET too, and no database outage.
  const status = (error as FastifyError).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) return answer(status, error.message);
  // "Try again later", not a 500: the request was fine, the database cannot serve it now.
  const outage = storageOutage(error);
  if (outage !== null) {
    const messages = OUTAGE_MESSAGES[outage];
    answeredForOutage.add(request);
    request.log.error({ err: error, code }, messages.log);
    return { ...answer(503, messages.reply, { 'retry-after': String(messages.retryAfter) }), outage };
  }
  request.log.error({ err: error }, 'request failed');
  return answer(500, INTERNAL_ERROR_MESSAGE);
}

export function handleError(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { status, message, headers } = errorAnswer(error, request);
  return sendError(reply, status, message, { ...headers });
}
