// Every error leaves the portal as JSON `{"error": "..."}` with a precise status; bad input
// is never a 5xx and no stack trace is ever sent.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { PortalError, type PortalErrorCode } from '../core/errors.js';
import { HttpError } from './http-error.js';

const STATUS_OF: Readonly<Record<PortalErrorCode, number>> = {
  'no-such-profile': 404,
  'no-such-user': 400,
  'user-disabled': 403,
  'unsupported-expiry': 400,
  'no-common-protocol': 406,
  'addresses-exhausted': 503,
  unavailable: 503,
};

/** Fastify's own request errors, translated to messages a person can act on. */
const FRAMEWORK_ERRORS: Readonly<Record<string, { status: number; message: string }>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, message: 'request body too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, message: 'unsupported Content-Type, send application/x-www-form-urlencoded' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, message: 'Content-Length does not match the body' },
  FST_ERR_CTP_EMPTY_TYPE: { status: 415, message: 'empty Content-Type, send application/x-www-form-urlencoded' },
  FST_ERR_CTP_INVALID_TYPE: { status: 415, message: 'invalid Content-Type, send application/x-www-form-urlencoded' },
};

/** Storage failures that mean "try again later", not "the request was wrong". */
const UNAVAILABLE_CODES = /^(SQLITE_(BUSY|LOCKED|IOERR|FULL|READONLY|CANTOPEN)|ECONNREFUSED|ETIMEDOUT|55P03|57P0[13]|53\d\d\d|08\d\d\d)/;
/** The pg driver's errors for a PostgreSQL connection lost mid-query carry no code, only these messages. */
const CONNECTION_LOST = /^(Connection terminated|Client (has encountered a connection error|was closed) and is not queryable)/;

export function sendError(reply: FastifyReply, status: number, message: string, headers: Record<string, string> = {}): FastifyReply {
  return reply.code(status).headers(headers).type('application/json').send(JSON.stringify({ error: message }));
}

export function handleError(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error instanceof HttpError) return sendError(reply, error.statusCode, error.message, { ...error.headers });
  if (error instanceof PortalError) return sendError(reply, STATUS_OF[error.code], error.message);
  const code = (error as { code?: unknown }).code;
  if (code === undefined && CONNECTION_LOST.test(error.message)) {
    request.log.error({ err: error }, 'storage unavailable');
    return sendError(reply, 503, 'database unavailable, try again later');
  }
  if (typeof code === 'string') {
    const known = FRAMEWORK_ERRORS[code];
    if (known !== undefined) return sendError(reply, known.status, known.message);
    if (UNAVAILABLE_CODES.test(code)) {
      request.log.error({ err: error }, 'storage unavailable');
      return sendError(reply, 503, 'database unavailable, try again later');
    }
  }
  const status = (error as FastifyError).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) return sendError(reply, status, error.message);
  request.log.error({ err: error }, 'request failed');
  return sendError(reply, 500, 'internal error; the portal log has the details');
}
