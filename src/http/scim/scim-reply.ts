// How the SCIM surface answers: `application/scim+json` for resources and for errors, and
// errors in SCIM's own format (RFC 7644 §3.12: the Error schema, `status` as a string, a
// `scimType` where one applies), whatever failed — the guard, the request, or the database.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { PortalError } from '../../core/errors.js';
import { SCIM_CONTENT_TYPE, ScimProblem, scimErrorBody, type ScimType } from '../../protocol/scim.js';
import { storageOutage } from '../../storage/errors.js';
import { statusOfPortalError } from '../plumbing/error-reply.js';

export function sendScim(
  reply: FastifyReply,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): FastifyReply {
  return reply.code(status).headers(headers).type(SCIM_CONTENT_TYPE).send(JSON.stringify(body));
}

export function sendScimError(
  reply: FastifyReply,
  status: number,
  scimType: ScimType | null,
  detail: string,
  headers: Record<string, string> = {},
): FastifyReply {
  return sendScim(reply, status, scimErrorBody(status, scimType, detail), headers);
}

/** The surface's error handler: every failure as a SCIM error; bad input is never a 5xx. */
export function handleScimError(
  error: FastifyError | Error,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  if (error instanceof ScimProblem) return sendScimError(reply, error.status, error.scimType, error.message);
  if (error instanceof PortalError) return sendScimError(reply, statusOfPortalError(error), null, error.message);
  if (storageOutage(error) !== null) {
    request.log.error({ err: error }, 'SCIM request: database unavailable');
    return sendScimError(reply, 503, null, 'database unavailable, try again later');
  }
  const status = (error as FastifyError).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const code = (error as FastifyError).code;
    const detail =
      code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || code === 'FST_ERR_CTP_EMPTY_TYPE'
        ? `unsupported Content-Type, send ${SCIM_CONTENT_TYPE}`
        : error.message;
    return sendScimError(reply, status, status === 400 ? 'invalidSyntax' : null, detail);
  }
  request.log.error({ err: error }, 'SCIM request failed');
  return sendScimError(reply, 500, null, 'internal error; the portal log has the details');
}
