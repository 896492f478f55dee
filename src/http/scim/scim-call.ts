// A SCIM request as the portal records it: an AdminCall named `scim METHOD /Resource` with the
// key that made it and what it was about (the SCIM id, the user id), bound to the use case's
// context so every change it makes is in the audit log with its key (src/core/events.ts).
import type { FastifyRequest } from 'fastify';
import type { AdminCall, AdminCaller } from '../../core/admin-call.js';
import type { PortalContext } from '../../core/context.js';
import { REVOCATION_HEADER } from '../../protocol/admin-api.js';
import { ScimProblem } from '../../protocol/scim.js';
import { HttpError } from '../plumbing/http-error.js';

export function scimCallContext(
  ctx: PortalContext,
  caller: AdminCaller | undefined,
  request: FastifyRequest,
  resource: string,
  parameters: Readonly<Record<string, string>>,
): PortalContext {
  // The guard ran first: a request without a caller never gets here.
  if (caller === undefined) throw new HttpError(401, 'authentication required');
  const call: AdminCall = {
    caller,
    name: `scim ${request.method} /${resource}`,
    parameters,
    successStatus: request.method === 'POST' ? 201 : request.method === 'DELETE' ? 204 : 200,
  };
  return { ...ctx, call, events: ctx.events.forCall(call) };
}

/** The receipts of what a request took from the nodes, in the Admin API's own header (none: no header). */
export function receiptHeaders(revocationIds: readonly string[]): Record<string, string> {
  return revocationIds.length === 0 ? {} : { [REVOCATION_HEADER]: revocationIds.join(', ') };
}

/** The `:id` of a resource's path. */
export function idOf(request: FastifyRequest): string {
  const { id } = request.params as { id?: unknown };
  if (typeof id !== 'string') throw new HttpError(404, 'no such resource');
  // No id holds a NUL, and PostgreSQL would refuse to compare with one (a 500).
  if (id.includes('\0')) throw new ScimProblem(404, null, 'no such resource');
  return id;
}
