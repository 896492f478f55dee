// One Admin API call: its method, path, parameters and handler. Route files build these
// with defineRoute; the server registers them and the OpenAPI document describes them.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { PortalContext } from '../core/context.js';
import { readParams, type ParamShape, type ParamSource, type ParamValues } from './params.js';

export type RouteResponse =
  | { readonly status: 200; readonly json: unknown }
  /** JSON already serialised (large listings are built as text). */
  | { readonly status: 200; readonly jsonText: string }
  | { readonly status: 200; readonly body: string; readonly headers: Readonly<Record<string, string>> }
  | { readonly status: 204 };

export interface ResponseDoc {
  readonly description: string;
  /** JSON body schema; absent for 204 or non-JSON bodies. */
  readonly schema?: z.ZodType;
  /** Content types of a non-JSON body (configuration files). */
  readonly contentTypes?: readonly string[];
}

export interface AdminRoute<S extends ParamShape = ParamShape> {
  readonly method: 'GET' | 'POST';
  /** Path below {base_url}/admin/api/v1. */
  readonly path: string;
  readonly summary: string;
  /** The eduVPN portal version that introduced the call; `extension` for this portal's own calls. */
  readonly since: string | 'extension';
  readonly source: ParamSource;
  readonly params: S;
  /** Where the parameters are read from; default: the query string for GET, the form body for POST. */
  readonly input?: (request: FastifyRequest) => unknown;
  readonly success: { readonly status: 200 | 204; readonly doc: ResponseDoc };
  // Method syntax on purpose: a list of routes with different parameter shapes must fit one type.
  handle(ctx: PortalContext, params: ParamValues<S>, request: FastifyRequest): Promise<RouteResponse>;
}

export function defineRoute<S extends ParamShape>(route: AdminRoute<S>): AdminRoute<S> {
  return route;
}

export async function runRoute<S extends ParamShape>(route: AdminRoute<S>, ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const input = route.input?.(request) ?? (route.source === 'query' ? request.query : request.body);
  const params = readParams(route.source, input, route.params);
  const response = await route.handle(ctx, params, request);
  if (response.status === 204) {
    await reply.code(204).send();
  } else if ('json' in response) {
    await reply.code(200).type('application/json').send(JSON.stringify(response.json));
  } else if ('jsonText' in response) {
    await reply.code(200).type('application/json').send(response.jsonText);
  } else {
    await reply.code(200).headers(response.headers).send(response.body);
  }
}
