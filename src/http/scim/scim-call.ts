// A SCIM request as the portal records it: an AdminCall named `scim METHOD /Resource` with the
// key that made it and what it was about (the SCIM id, the user id), bound to the use case's
// context so every change it makes is in the audit log with its key (src/core/events.ts); and,
// as the answer leaves, a row for a change request that changed nothing (refused, failed), as
// the Admin API records its failed calls (src/http/admin-api/surface.ts).
import type { FastifyRequest } from 'fastify';
import { recordAdminCall } from '../../core/access/index.js';
import type { AdminCall, AdminCaller } from '../../core/admin-call.js';
import type { PortalContext } from '../../core/context.js';
import type { PortalEvents } from '../../core/events.js';
import { REVOCATION_HEADER } from '../../protocol/admin-api.js';
import { ScimProblem } from '../../protocol/scim.js';
import { HttpError } from '../plumbing/http-error.js';
import { decodePath } from '../plumbing/surface.js';
import type { ScimCallers } from './scim-guard.js';

/** A request's call, once its route made one, and the events view its change ran through. */
export interface ScimCallMade {
  readonly call: AdminCall;
  readonly events: PortalEvents;
}

/** What the surface knows of each request: who asks (set by the guard), and the call its route made. */
export interface ScimRequests {
  readonly callers: ScimCallers;
  readonly calls: WeakMap<FastifyRequest, ScimCallMade>;
}

/** Requests that ask for a change: the others are reads, which are not recorded. */
const CHANGE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** A parameter value longer than this (no SCIM id or user id is) is left out of the row. */
const MAX_RECORDED_VALUE = 255;

export function scimCallContext(
  ctx: PortalContext,
  requests: ScimRequests,
  request: FastifyRequest,
  resource: string,
  parameters: Readonly<Record<string, string>>,
): PortalContext {
  const caller = requests.callers.get(request);
  // The guard ran first: a request without a caller never gets here.
  if (caller === undefined) throw new HttpError(401, 'authentication required');
  const call: AdminCall = {
    caller,
    name: `scim ${request.method} /${resource}`,
    parameters,
    successStatus: successStatusOf(request),
  };
  const events = ctx.events.forCall(call);
  requests.calls.set(request, { call, events });
  return { ...ctx, call, events };
}

/**
 * Records, as its answer leaves, a change request of a known caller that changed nothing: one
 * refused (400, 404, 409, 413, …) or failed (500), with its status and the answer's detail. A
 * change that committed was recorded in its own transaction already; a refusal by the guard
 * (401, 403) by the guard. A request the portal could not serve then (503: the database
 * unavailable, another large body being read) changed nothing and is retried by the directory:
 * not recorded, as the Admin API does not record a database outage. A database that cannot
 * record the row is logged, and the answer stands.
 */
export function unchangedCallRecorder(ctx: PortalContext, requests: ScimRequests, prefix: string) {
  return async (request: FastifyRequest, status: number, payload: unknown): Promise<void> => {
    const caller = requests.callers.get(request);
    if (caller === undefined || !CHANGE_METHODS.has(request.method) || status === 503) return;
    const made = requests.calls.get(request);
    if (made !== undefined && made.events.changesRecorded > 0) return;
    const call = made?.call ?? callOfRequest(request, caller, prefix);
    const detail = status >= 400 ? detailOf(payload) : null;
    await recordAdminCall(ctx, call, status, detail).catch((error: unknown) =>
      request.log.error({ err: error, call: call.name, status }, 'could not record a SCIM request in the audit log'),
    );
  };
}

/** The call of a request refused before its route made one: by its resource, with the id or name it names. */
function callOfRequest(request: FastifyRequest, caller: AdminCaller, prefix: string): AdminCall {
  const path = decodePath(request.url.split('?')[0] ?? '').replace(prefix, '');
  const resource = /^\/(Users|Groups)(?:\/|$)/.exec(path)?.[1];
  const { id } = (request.params ?? {}) as { id?: unknown };
  const body = (typeof request.body === 'object' && request.body !== null ? request.body : {}) as Record<
    string,
    unknown
  >;
  const named = (name: string): unknown => Object.entries(body).find(([key]) => key.toLowerCase() === name)?.[1];
  const parameters: Record<string, string> = {};
  if (resource !== undefined && typeof id === 'string') parameters['id'] = id;
  else if (resource === 'Users' && request.method === 'POST') setText(parameters, 'user_id', named('username'));
  else if (resource === 'Groups' && request.method === 'POST') setText(parameters, 'group', named('displayname'));
  return {
    caller,
    name: `scim ${request.method} ${resource === undefined ? path : `/${resource}`}`,
    parameters: Object.fromEntries(
      Object.entries(parameters).filter(([, value]) => value.length <= MAX_RECORDED_VALUE),
    ),
    successStatus: successStatusOf(request),
  };
}

function setText(parameters: Record<string, string>, name: string, value: unknown): void {
  if (typeof value === 'string') parameters[name] = value;
}

function successStatusOf(request: FastifyRequest): number {
  return request.method === 'POST' ? 201 : request.method === 'DELETE' ? 204 : 200;
}

/** The `detail` of a SCIM error answer (RFC 7644: its Error schema). */
function detailOf(payload: unknown): string | null {
  if (typeof payload !== 'string') return null;
  try {
    const parsed: unknown = JSON.parse(payload);
    const detail = typeof parsed === 'object' && parsed !== null ? (parsed as { detail?: unknown }).detail : null;
    return typeof detail === 'string' ? detail : null;
  } catch {
    return null;
  }
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
