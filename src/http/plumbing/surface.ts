// One HTTP surface of the portal's server (the Admin API, the Node API, enroll, …): the paths
// it owns, the guard every request for them passes before its body is read, and a Fastify
// plugin with its routes. buildServer (src/http/server.ts) registers a list of them.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';

export interface HttpSurface {
  /** Whether a request is for this surface, however its path is spelled (see requestsUnder). */
  owns(request: FastifyRequest): boolean;
  /**
   * Runs first for every request the surface owns: routed or not, and for a URL the router
   * cannot decode. A guard that answers ends the request there.
   */
  guard(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /**
   * How the surface answers a request its routes never saw (a URL the router cannot decode), in
   * the error format its clients read; default: the portal's JSON `{"error": "…"}`.
   */
  refuse?(reply: FastifyReply, status: number, message: string): FastifyReply;
  /** Runs as an answer of the surface leaves (the Admin API records refusals in its audit log). */
  beforeAnswer?(request: FastifyRequest, status: number, payload: unknown): Promise<void>;
  /** Its routes. */
  readonly plugin: FastifyPluginAsync;
  /** Its paths that answer 405 to another method, with the method they take. */
  readonly methods: ReadonlyMap<string, string>;
}

/**
 * Whether a request is for `base` or below. The router matches percent-decoded paths
 * (`/admin/ap%69/v1/users` reaches /users), so the decision follows the matched route, and for
 * unmatched paths both the raw and the decoded path: a spelling of the URL must never skip a guard.
 */
export function requestsUnder(base: string): (request: FastifyRequest) => boolean {
  const isUnder = (path: string): boolean => path === base || path.startsWith(`${base}/`);
  return (request) => {
    const routeUrl = request.routeOptions.url;
    if (routeUrl !== undefined && isUnder(routeUrl)) return true;
    const path = request.url.split('?')[0] ?? '';
    return isUnder(path) || isUnder(decodePath(path));
  };
}

/** The path as the router sees it; undecodable text is kept as sent. */
export function decodePath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}
