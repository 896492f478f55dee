// One Admin API call: its method, path, needed scope, parameters and answer (from
// ADMIN_API_CALLS) and its handler, whose answer must be of the call's answer type. Route files
// build these with defineRoute; the server registers them and the OpenAPI document describes
// them. runRoute checks the caller's scope (403, before the handler), binds the call to its
// caller (the use case's context carries it: profile limits, and the events view that records
// the change with its caller in the audit log) and makes POSTs with an Idempotency-Key safe to retry.
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import {
  callerLineage,
  callerProfiles,
  callerScope,
  describeCaller,
  type AdminCall,
  type AdminCaller,
} from '../../core/admin-call.js';
import type { PortalEvents } from '../../core/events.js';
import type { PortalContext } from '../../core/context.js';
import { assertProfileAllowed } from '../../core/access/index.js';
import {
  IDEMPOTENCY_KEY_HEADER,
  scopeAllows,
  successStatusOf,
  type AdminScope,
  type AnswerBody,
  type CallAnswer,
} from '../../protocol/admin-api.js';
import type { HandedOut, HandedOutKind } from '../../storage/idempotency.js';
import type { ParamsSchema } from '../../protocol/admin-api-params.js';
import { auditedParameters, sentParameters, type AdminRequests } from './admin-requests.js';
import { HttpError } from '../plumbing/http-error.js';
import { fingerprintOf, idempotencyKeyOf, type IdempotentCalls, type KeepAnswer } from './idempotency.js';
import { readParams, type ParamSource } from '../plumbing/params.js';
import type { RouteAnswer, RouteResponse } from '../plumbing/route-response.js';
import { jsonPartsByteLength } from '../../shared/json-parts.js';

export type { JsonAnswer, RouteAnswer, RouteResponse } from '../plumbing/route-response.js';

/** What a handler gets besides its parameters. */
export interface RouteCall {
  /**
   * Set for a POST sent with an Idempotency-Key: a handler whose use case can keep its answer
   * inside the change's transaction passes it on (create); for the others it is kept right after.
   */
  readonly keepAnswer?: KeepAnswer;
}

export interface AdminRoute<S extends ParamsSchema = ParamsSchema, A extends CallAnswer = CallAnswer> {
  readonly method: 'GET' | 'POST';
  /** Path below {base_url}/admin/api/v1. */
  readonly path: string;
  /** The scope a key needs for this call (src/protocol/admin-api.ts). */
  readonly scope: AdminScope;
  readonly summary: string;
  /** The eduVPN portal version that introduced the call; `extension` for this portal's own calls. */
  readonly since: string | 'extension';
  readonly source: ParamSource;
  /** The call's parameters, from ADMIN_API_CALLS (src/protocol/admin-api.ts). */
  readonly params: S;
  /** Where the parameters are read from; default: the query string for GET, the form body for POST. */
  readonly input?: (request: FastifyRequest) => unknown;
  /** Request headers the answer depends on (create: Accept): a retry with an Idempotency-Key must send the same. */
  readonly varyHeaders?: readonly string[];
  /** When set, the call is refused (403) to keys limited to some profiles (the audit log spans every profile). */
  readonly needsEveryProfile?: boolean;
  /**
   * Whether a call with these (audited) parameters looks people up by address: such a call is
   * in the audit log whatever it answered (but a 400, which looked nothing up), with its reason.
   */
  readonly lookupOfPeople?: (parameters: Readonly<Record<string, string>>) => boolean;
  /** What the call answers when it succeeds, from ADMIN_API_CALLS: its schema, or no body, or a file. */
  readonly answer: A;
  /**
   * What the call's answer hands out that can be taken back: kept for a retry (Idempotency-Key),
   * the answer is dropped once that is revoked or replaced, and a retry answers 410
   * (src/http/admin-api/hand-outs.ts).
   */
  readonly handsOut?: HandOut<A>;
  /** What the answer holds, for the OpenAPI document. */
  readonly answerDoc: string;
  // Method syntax on purpose: a list of routes with different parameter shapes must fit one type.
  handle(ctx: PortalContext, params: z.output<S>, request: FastifyRequest, call: RouteCall): Promise<RouteAnswer<A>>;
}

/** What a call's answer hands out that can be taken back (AdminRoute.handsOut). */
export interface HandOut<A extends CallAnswer> {
  readonly kind: HandedOutKind;
  /** Its id in the answer; absent when the use case names it as it keeps the answer in its change (create). */
  // Method syntax on purpose, as `handle`: a list of routes with different answers must fit one type.
  idIn?(answer: AnswerBody<A>): string;
}

export function defineRoute<S extends ParamsSchema, A extends CallAnswer>(route: AdminRoute<S, A>): AdminRoute<S, A> {
  return route;
}

export interface RouteServices {
  readonly requests: AdminRequests;
  readonly idempotent: IdempotentCalls;
}

export async function runRoute<S extends ParamsSchema, A extends CallAnswer>(
  route: AdminRoute<S, A>,
  ctx: PortalContext,
  services: RouteServices,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const state = services.requests.get(request);
  // The guard ran first and let only callers with a valid key through.
  if (state === undefined || callerScope(state.caller) === null) throw new HttpError(401, 'authentication required');
  const { caller } = state;
  const input = route.input?.(request) ?? (route.source === 'query' ? request.query : request.body);
  const { call, callCtx, params, events } = bindCall(route, ctx, caller, input, request);
  state.events = events;
  const idempotencyKey = route.method === 'POST' ? idempotencyKeyOf(request.headers) : undefined;
  let response: RouteResponse;
  const lineage = callerLineage(caller);
  if (idempotencyKey === undefined || lineage === null) {
    response = await route.handle(callCtx, params, request, {});
  } else {
    const varying = Object.fromEntries(
      (route.varyHeaders ?? []).map((header) => [header, String(request.headers[header.toLowerCase()] ?? '')]),
    );
    const parameters = sentParameters(Object.keys(route.params.shape), input);
    const outcome = await services.idempotent.run(
      {
        keyLineage: lineage,
        idempotencyKey,
        call: call.name,
        fingerprint: fingerprintOf(call.name, parameters, varying),
        ...handedOutBy(route),
      },
      (keepAnswer) => route.handle(callCtx, params, request, { keepAnswer }),
    );
    response = outcome.response;
    if (outcome.replayed)
      state.detail = `answer of an earlier request with this ${IDEMPOTENCY_KEY_HEADER} given again; nothing changed`;
  }
  if (response.status === 204) {
    await reply
      .code(204)
      .headers(response.headers ?? {})
      .send();
  } else if ('json' in response) {
    await reply
      .code(200)
      .type('application/json')
      .headers(response.headers ?? {})
      .send(JSON.stringify(response.json));
  } else if ('jsonText' in response) {
    await reply.code(200).type('application/json').send(response.jsonText);
  } else if ('jsonParts' in response) {
    const { jsonParts } = response;
    await reply
      .code(200)
      .type('application/json')
      .header('content-length', jsonPartsByteLength(jsonParts))
      .headers(response.headers ?? {})
      .send(Readable.from(jsonParts.map((part) => (typeof part === 'string' ? Buffer.from(part) : part))));
  } else {
    await reply.code(200).headers(response.headers).send(response.body);
  }
}

/** How the idempotent run reads what the route's answer hands out, when the answer names it. */
function handedOutBy<A extends CallAnswer>(
  route: AdminRoute<ParamsSchema, A>,
): { readonly handedOutBy?: (response: RouteResponse) => HandedOut } {
  const handsOut = route.handsOut;
  if (handsOut?.idIn === undefined) return {};
  return {
    handedOutBy: (response) => {
      if (!('json' in response)) throw new Error(`${route.path} answered no JSON value to name what it hands out`);
      // The handler's own answer, of the type its call's schema says (RouteAnswer<A>).
      const id = handsOut.idIn?.(response.json as AnswerBody<A>);
      if (id === undefined) throw new Error(`${route.path} names nothing it hands out`);
      return { kind: handsOut.kind, id };
    },
  };
}

/** A call bound to its caller: the context a use case gets (the call, the events view) and its parameters. */
export interface BoundCall<S extends ParamsSchema> {
  readonly call: AdminCall;
  readonly callCtx: PortalContext;
  readonly events: PortalEvents;
  readonly params: z.output<S>;
}

/**
 * Binds a call of `route` to its caller, the one way every Admin API call and every change made
 * in the console takes: the caller's scope and profile limit are checked first (403, before
 * anything is read), the parameters parsed by the route's own rules (400).
 */
export function bindCall<S extends ParamsSchema, A extends CallAnswer>(
  route: AdminRoute<S, A>,
  ctx: PortalContext,
  caller: AdminCaller,
  input: unknown,
  request: FastifyRequest,
): BoundCall<S> {
  const scope = callerScope(caller);
  const profiles = callerProfiles(caller);
  const name = route.path.slice(1);
  const key = describeCaller(caller);
  if (scope === null) throw new HttpError(401, 'authentication required');
  // Refused before the handler runs: nothing is read from or written to the database for it.
  if (!scopeAllows(scope, route.scope)) {
    throw new HttpError(403, `${key} has scope "${scope}"; ${name} needs scope "${route.scope}"`);
  }
  if (route.needsEveryProfile === true && profiles !== null) {
    throw new HttpError(
      403,
      `${key} is limited to profiles ${profiles.join(', ')}; ${name} needs a key for every profile`,
    );
  }
  const call: AdminCall = {
    caller,
    name,
    parameters: auditedParameters(Object.keys(route.params.shape), input, request),
    successStatus: successStatusOf(route.answer),
  };
  const events = ctx.events.forCall(call);
  const callCtx: PortalContext = { ...ctx, call, events };
  const params = readParams(route.source, input, route.params, ctx.config);
  // A kept answer is given only to a caller who may make the request now: the scope was checked
  // above; the profile it names is checked here, before any replay (a handler checks it again).
  if ('profile_id' in params && typeof params.profile_id === 'string') assertProfileAllowed(callCtx, params.profile_id);
  return { call, callCtx, events, params };
}

/** The users an answer names (`user_id` of the entries of its lists): whom a look-up of people found. */
export function usersNamedIn(answer: unknown): string[] {
  if (typeof answer !== 'object' || answer === null) return [];
  return Object.values(answer).flatMap((value: unknown) =>
    Array.isArray(value)
      ? value.flatMap((entry: unknown) =>
          typeof entry === 'object' && entry !== null && typeof (entry as { user_id?: unknown }).user_id === 'string'
            ? [(entry as { user_id: string }).user_id]
            : [],
        )
      : [],
  );
}
