// The console reads and changes through the Admin API's own route definitions (bindCall, then
// the route's handler): the same scope and profile checks, parameter rules, use cases and audit
// rows as the API, with the console session's key as the caller. No second path to the database.
import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { AdminCaller } from '../../core/admin-call.js';
import type { PortalContext } from '../../core/context.js';
import { PortalError } from '../../core/errors.js';
import { recordAdminCall, recordLookup } from '../../core/access/index.js';
import { bindCall, usersNamedIn, type AdminRoute, type BoundCall } from '../admin-api/admin-route.js';
import { INTERNAL_ERROR_MESSAGE, isDatabaseOutage, statusOfPortalError } from '../plumbing/error-reply.js';
import { HttpError } from '../plumbing/http-error.js';
import type { ParamsSchema } from '../../protocol/admin-api-params.js';
import { successStatusOf, type CallAnswer } from '../../protocol/admin-api.js';
import type { JsonAnswer, RouteAnswer } from '../plumbing/route-response.js';
import { jsonPartsText } from '../../shared/json-parts.js';

/** A call the portal refused or could not make: its status and the API's message (which names the limit on 403). */
export class ConsoleRefusal extends Error {
  override readonly name = 'ConsoleRefusal';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface CallOptions {
  /** Request headers the route reads (create: Accept), instead of the browser's. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * Per console request, whether a change it asked for through callRoute went through (true, also
 * one that had nothing to do) or failed with nothing committed (false): what the console's error
 * page may say of a change that failed. No entry: the request asked for no change.
 */
const changesCommitted = new WeakMap<FastifyRequest, boolean>();

/** Whether a change of this request went through; null when it asked for none. */
export function changeCommitted(request: FastifyRequest): boolean | null {
  return changesCommitted.get(request) ?? null;
}

/**
 * Makes one Admin API call as `caller`; a refusal becomes a ConsoleRefusal, and a change that was
 * refused or failed is in the audit log (recordFailure).
 */
export async function callRoute<S extends ParamsSchema, A extends CallAnswer>(
  ctx: PortalContext,
  caller: AdminCaller,
  request: FastifyRequest,
  route: AdminRoute<S, A>,
  input: Readonly<Record<string, string>>,
  options: CallOptions = {},
): Promise<RouteAnswer<A>> {
  const routeRequest = options.headers === undefined ? request : withHeaders(request, options.headers);
  let bound: BoundCall<S> | null = null;
  try {
    bound = bindCall(route, ctx, caller, input, routeRequest);
    const { call } = bound;
    const answer = await route.handle(bound.callCtx, bound.params, routeRequest, {});
    // As the API's surface does: a look-up of people by address is in the audit log with its reason.
    if (route.lookupOfPeople?.(call.parameters) === true) {
      const found = 'json' in answer ? usersNamedIn(answer.json) : [];
      await recordLookup(ctx, call, 200, null, found).catch((auditError: unknown) =>
        request.log.error({ err: auditError }, 'could not record a console look-up in the audit log'),
      );
    }
    // As the API's surface does: a change that had nothing to do (a configuration deleted
    // meanwhile) is in the audit log too; one that changed something was recorded with it.
    else if (route.method === 'POST' && bound.events.changesRecorded === 0) {
      await recordAdminCall(ctx, call, call.successStatus, null).catch((auditError: unknown) =>
        request.log.error({ err: auditError }, 'could not record a console call in the audit log'),
      );
    }
    if (route.method === 'POST') changesCommitted.set(request, true);
    return answer;
  } catch (error) {
    // A change's audit row commits with it: none recorded, nothing committed.
    if (route.method === 'POST')
      changesCommitted.set(request, changesCommitted.get(request) === true || (bound?.events.changesRecorded ?? 0) > 0);
    await recordFailure(ctx, caller, request, route, bound, error);
    throw refusalOf(error) ?? error;
  }
}

/**
 * As the API's surface does for an answer that changed nothing: a refusal, and a change that
 * failed — refused, or answered 500 for an error the portal did not expect — are in the audit
 * log, who tried what. Not a change answered 503 for a database outage, which could not take the
 * row either, nor one whose change was recorded before the error (in its own transaction).
 */
async function recordFailure<S extends ParamsSchema, A extends CallAnswer>(
  ctx: PortalContext,
  caller: AdminCaller,
  request: FastifyRequest,
  route: AdminRoute<S, A>,
  bound: BoundCall<S> | null,
  error: unknown,
): Promise<void> {
  const refusal = refusalOf(error);
  const call = bound?.call ?? null;
  if (
    refusal === null &&
    (route.method !== 'POST' || isDatabaseOutage(error) || (bound?.events.changesRecorded ?? 0) > 0)
  )
    return;
  const status = refusal?.status ?? 500;
  const detail = refusal?.message ?? INTERNAL_ERROR_MESSAGE;
  const lookup = call !== null && status !== 400 && route.lookupOfPeople?.(call.parameters) === true;
  if (lookup) {
    await recordLookup(ctx, call, status, detail, []).catch((auditError: unknown) =>
      request.log.error({ err: auditError }, 'could not record a console look-up in the audit log'),
    );
  } else if (status === 401 || status === 403 || route.method === 'POST') {
    const audited = call ?? {
      caller,
      name: route.path.slice(1),
      parameters: {},
      successStatus: successStatusOf(route.answer),
    };
    await recordAdminCall(ctx, audited, status, detail).catch((auditError: unknown) =>
      request.log.error({ err: auditError }, 'could not record a console call in the audit log'),
    );
  }
}

/** The JSON answer of a call, of the call's answer type (ADMIN_API_CALLS). */
export async function readAnswer<S extends ParamsSchema, T>(
  ctx: PortalContext,
  caller: AdminCaller,
  request: FastifyRequest,
  route: AdminRoute<S, z.ZodType<T>>,
  input: Readonly<Record<string, string>> = {},
): Promise<T> {
  return answerValue(route.answer, await callRoute(ctx, caller, request, route, input));
}

/**
 * The value of a JSON answer: the handler's own value as it is, or, for a listing the portal
 * keeps as JSON text (src/shared/json-parts.ts), that text read back through the call's schema.
 */
export function answerValue<T>(schema: z.ZodType<T>, answer: JsonAnswer<T>): T {
  if ('json' in answer) return answer.json;
  return schema.parse(JSON.parse(jsonPartsText(answer.jsonParts)));
}

function refusalOf(error: unknown): ConsoleRefusal | null {
  if (error instanceof HttpError) return new ConsoleRefusal(error.statusCode, error.message);
  if (error instanceof PortalError) return new ConsoleRefusal(statusOfPortalError(error), error.message);
  return null;
}

/** The request as the route sees it, with some headers replaced. */
function withHeaders(request: FastifyRequest, headers: Readonly<Record<string, string>>): FastifyRequest {
  const merged = { ...request.headers, ...headers };
  return new Proxy(request, {
    get: (target, property) => (property === 'headers' ? merged : Reflect.get(target, property, target)),
  });
}
