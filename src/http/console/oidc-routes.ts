// The console's second way in, single sign-on: "Sign in with <provider>" sends the browser to
// the OpenID provider (`oidc/start`), which sends it back to `oidc/callback`; the flow itself is
// oidc.ts, the session core/console's. Both paths are open before sign-in (the
// console's guard still applies `adminApi.allowList` to them).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  refuseOidcSignIn,
  signInWithOidc,
  type ConsoleSession,
  type ConsoleSessionTimes,
} from '../../core/console/index.js';
import type { PortalContext } from '../../core/context.js';
import { OIDC_FLOW_LIFETIME_MS, type ConsoleOidc } from './oidc.js';
import { clearConsoleCookie, consoleCookie, readConsoleCookie } from './cookies.js';
import { html } from './html.js';
import { page } from './layout.js';

/** The flow's sealed secrets between the two requests; over plain HTTP sent only to the callback's path. */
const FLOW_COOKIE = 'vpn_portal_console_oidc';

export interface OidcRouteOptions {
  readonly ctx: PortalContext;
  readonly oidc: ConsoleOidc;
  /** The console's path with a trailing slash. */
  readonly base: string;
  readonly times: ConsoleSessionTimes;
  /** The sign-in page with one line why. */
  readonly signInPage: (reply: FastifyReply, status: number, why: string) => FastifyReply;
  /** Gives the browser a new session's cookie. */
  readonly setSessionCookie: (request: FastifyRequest, reply: FastifyReply, session: ConsoleSession) => void;
}

/** The paths the console's guard lets through without a session. */
export function oidcPaths(base: string): readonly string[] {
  return [`${base}oidc/start`, `${base}oidc/callback`];
}

export function registerOidcRoutes(app: FastifyInstance, options: OidcRouteOptions): void {
  const { ctx, oidc, base, times } = options;
  const [startPath = '', callbackPath = ''] = oidcPaths(base);

  // A link, not a form: starting a flow changes nothing here, and the provider asks the person.
  app.get(startPath, async (request, reply) => {
    const start = await oidc.begin();
    if (!start.ok) {
      request.log.warn({ issuer: oidc.settings.issuer.href }, 'OpenID provider cannot be reached');
      return options.signInPage(reply, 503, start.reason);
    }
    // Lax: the provider's redirect back is a top-level navigation from another site.
    const flowCookie = consoleCookie(request, FLOW_COOKIE, callbackPath);
    void reply.setCookie(flowCookie.name, start.flow, {
      path: flowCookie.path,
      httpOnly: true,
      sameSite: 'lax',
      secure: flowCookie.secure,
      maxAge: OIDC_FLOW_LIFETIME_MS / 1000,
    });
    return reply.redirect(start.url.href, 303);
  });

  app.get(callbackPath, async (request, reply) => {
    const url = request.raw.url ?? '';
    const query = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
    const flowCookie = consoleCookie(request, FLOW_COOKIE, callbackPath);
    const finish = await oidc.finish(query, readConsoleCookie(request, flowCookie));
    clearConsoleCookie(reply, flowCookie);
    const result = finish.ok
      ? await signInWithOidc(ctx, finish.grant, request.ip, times)
      : await refuseOidcSignIn(ctx, finish.subject, finish.reason, request.ip);
    // 403, not 401: a refused sign-in has no WWW-Authenticate challenge to offer.
    if (!result.ok) return options.signInPage(reply, 403, result.reason);
    options.setSessionCookie(request, reply, result.session);
    // A page of our own that moves on, not a redirect: RFC 6265bis lets a browser withhold a
    // SameSite=Strict cookie on a redirect chain another site began (today's Chromium sends it;
    // a browser that does not would show the sign-in form again). From our page it is same-site.
    const who = `oidc:${finish.ok ? finish.grant.subject : ''}`;
    return reply
      .code(200)
      .type('text/html; charset=utf-8')
      .send(
        page(
          null,
          'Signed in',
          html`<meta http-equiv="refresh" content="0; url=${base}">
<p class="notice" role="status">Signed in as ${who}.</p>
<p><a class="button" href="${base}">Continue to the console</a></p>`,
          base,
        ),
      );
  });
}
