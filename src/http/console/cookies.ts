// Where the console's cookies live. Over TLS their names carry the `__Host-` prefix, which a
// browser accepts only when set by this very host (Secure, `Path=/`, no `Domain`): a sibling domain
// can then plant neither a session of its own choosing nor a half-finished sign-in, and a cookie
// without the prefix is not read at all. Over plain HTTP no prefix can hold, so the plain name under
// the console's own path is used (a loopback console, the tests).
import type { FastifyReply, FastifyRequest } from 'fastify';

/** A cookie's name and scope for one request. */
export interface ConsoleCookie {
  readonly name: string;
  readonly path: string;
  readonly secure: boolean;
}

/** The cookie `name` as this request's protocol allows it; `plainPath` scopes it over plain HTTP. */
export function consoleCookie(request: FastifyRequest, name: string, plainPath: string): ConsoleCookie {
  return request.protocol === 'https'
    ? { name: `__Host-${name}`, path: '/', secure: true }
    : { name, path: plainPath, secure: false };
}

/** The cookie's value as the browser sent it, if it did. */
export function readConsoleCookie(request: FastifyRequest, cookie: ConsoleCookie): string | undefined {
  return request.cookies[cookie.name];
}

/** Tells the browser to forget the cookie (with the attributes it was set with, as `__Host-` requires). */
export function clearConsoleCookie(reply: FastifyReply, cookie: ConsoleCookie): void {
  void reply.clearCookie(cookie.name, { path: cookie.path, secure: cookie.secure });
}
