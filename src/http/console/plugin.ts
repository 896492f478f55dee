// The admin console at {baseUrl}admin/: server-rendered pages for the daily work of a
// VPN administrator, as one Fastify plugin with its own guard. Same process, port and
// `adminApi.allowList` as the Admin API; every read and change goes through the API's route
// definitions as the signed-in key (./calls.ts). The guard answers every console request: the
// source address first, then the session cookie (its key checked on every request), then, for a
// change, the CSRF token and the browser's own Sec-Fetch-Site/Origin. Every answer carries a strict
// Content-Security-Policy (no inline script or style) and is never cached.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import cookie from '@fastify/cookie';
import fastifyStatic from '@fastify/static';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import {
  checkSession,
  recordThrottledSignIn,
  signIn,
  signOut,
  type ActiveConsoleSession,
  type ConsoleSession,
  type ConsoleSessionTimes,
} from '../../core/console/index.js';
import { AdminKeyUse, recordAdminCall } from '../../core/access/index.js';
import { callerKey, unauthenticatedCaller, type AdminCaller } from '../../core/admin-call.js';
import { constantTimeEquals } from '../../shared/constant-time.js';
import { AddressAllowList } from '../../net/address-allow-list.js';
import { errorAnswer } from '../plumbing/error-reply.js';
import { changeCommitted } from './calls.js';
import { ConsoleOidc } from './oidc.js';
import { SIGN_IN_THROTTLE, SignInThrottle } from './sign-in-throttle.js';
import { actionHandlers, actionPages } from './actions.js';
import { oidcPaths, registerOidcRoutes } from './oidc-routes.js';
import { html } from './html.js';
import { page, problem } from './layout.js';
import { pageHandlers } from './pages.js';
import { devicePages } from './device-pages.js';
import type { ConsolePage, ConsoleRequest } from './console-request.js';
import { trackReconciles } from './reconcile-times.js';
import { clearConsoleCookie, consoleCookie, readConsoleCookie } from './cookies.js';

const COOKIE_NAME = 'vpn_portal_console';

const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** The console's files, beside src/ and dist/ alike (both are two levels below the repository). */
const ASSETS = fileURLToPath(new URL('../../../assets/console/', import.meta.url));
const CHART_JS = path.dirname(createRequire(import.meta.url).resolve('chart.js'));

export interface ConsoleOptions {
  readonly ctx: PortalContext;
}

/** What the console's parts share: where it lives, how sessions are checked, the sign-in ways. */
interface ConsoleSetup {
  readonly ctx: PortalContext;
  /** `{basePath}/admin/`. */
  readonly base: string;
  readonly allowList: AddressAllowList;
  readonly times: ConsoleSessionTimes;
  /** The session the guard found for each request it let through. */
  readonly sessions: WeakMap<FastifyRequest, ActiveConsoleSession>;
  readonly oidc: ConsoleOidc | null;
  /** The OpenID Connect paths, open without a session. */
  readonly openPaths: ReadonlySet<string>;
  readonly signInButton: { readonly href: string; readonly label: string } | null;
  /** Notes the use of the admin key a session signed in with, as the Admin API notes a call's. */
  readonly keyUse: AdminKeyUse;
  /** Failed sign-ins per client address. */
  readonly throttle: SignInThrottle;
}

export async function adminConsole(app: FastifyInstance, { ctx }: ConsoleOptions): Promise<void> {
  const setup = consoleSetup(ctx);
  trackReconciles(ctx);
  await app.register(cookie);
  guardEveryRequest(app, setup);
  answerErrorsWithPages(app, setup);
  await serveAssets(app, setup.base);
  registerSignIn(app, setup);
  registerPages(app, setup);
}

function consoleSetup(ctx: PortalContext): ConsoleSetup {
  const base = `${ctx.config.basePath}/admin/`;
  const oidc =
    ctx.config.adminConsole.oidc === null ? null : new ConsoleOidc(ctx.config.adminConsole.oidc, ctx.keys, ctx.clock);
  // Asked once now so a wrong issuer shows in the log at start; sign-in asks again if this failed.
  oidc?.provider().catch((error: unknown) => {
    ctx.logger.warn(
      { issuer: oidc.settings.issuer.href, err: error },
      'adminConsole.oidc: the OpenID provider cannot be reached; single sign-on will try again',
    );
  });
  return {
    ctx,
    base,
    allowList: new AddressAllowList(ctx.config.adminApi.allowList),
    times: {
      idleTimeoutMs: ctx.config.adminConsole.idleTimeoutMs,
      sessionLifetimeMs: ctx.config.adminConsole.sessionLifetimeMs,
      addressAllowed: (list, address) => new AddressAllowList(list).allows(address),
    },
    sessions: new WeakMap(),
    oidc,
    openPaths: new Set(oidc === null ? [] : oidcPaths(base)),
    signInButton: oidc === null ? null : { href: `${base}oidc/start`, label: oidc.buttonLabel },
    keyUse: new AdminKeyUse(ctx),
    throttle: new SignInThrottle(SIGN_IN_THROTTLE),
  };
}

/** The call name the audit log gives a request the console's guard refused. */
export const CONSOLE_REQUEST_CALL = 'console/request';

/** The guard: the source address, then the session cookie, then for a change its origin and CSRF token. */
function guardEveryRequest(app: FastifyInstance, setup: ConsoleSetup): void {
  const { ctx, base, allowList, times, sessions, openPaths, signInButton, keyUse } = setup;
  // Every refusal is in the audit log, as the Admin API's are: who (the session's caller when
  // there is one), from where, which page, and why.
  const refuse = async (request: FastifyRequest, reply: FastifyReply, caller: AdminCaller, why: string) => {
    const parameters = { method: request.method, path: request.url.split('?')[0] ?? '' };
    await recordAdminCall(ctx, { caller, name: CONSOLE_REQUEST_CALL, parameters, successStatus: 200 }, 403, why).catch(
      (error: unknown) => request.log.error({ err: error }, 'could not record a console refusal in the audit log'),
    );
    await sendPage(reply, 403, page(null, 'Not allowed', problem(403, why), base));
  };
  app.addHook('onRequest', async (request, reply) => {
    setConsoleHeaders(reply);
    const nobody = unauthenticatedCaller(request.ip);
    if (!allowList.allows(request.ip)) {
      request.log.warn({ ip: request.ip }, 'admin console request from an address outside adminApi.allowList');
      await refuse(request, reply, nobody, 'Your address may not use the admin console (adminApi.allowList).');
      return;
    }
    const route = request.routeOptions.url ?? '';
    if (route.startsWith(`${base}assets/`) || route === `${base}sign-in` || openPaths.has(route)) return;
    // A change must come from a console page: the browser says so (Sec-Fetch-Site, Origin).
    if (request.method === 'POST' && !sameOrigin(request)) {
      await refuse(
        request,
        reply,
        nobody,
        'A change must be made from a page of the console (cross-site request refused).',
      );
      return;
    }
    // Another site may link to a page (a navigation), but not embed or fetch one: a page of a
    // sibling domain would otherwise make the browser look people up in an administrator's name.
    if (request.method === 'GET' && embeddedFromElsewhere(request)) {
      await refuse(
        request,
        reply,
        nobody,
        'A page of the console may be opened from another site, not embedded or fetched by one.',
      );
      return;
    }
    const sessionCookie = consoleCookie(request, COOKIE_NAME, base);
    const token = readConsoleCookie(request, sessionCookie);
    const check = token === undefined ? null : await checkSession(ctx, token, request.ip, times);
    // No 401 here: it would need a WWW-Authenticate challenge, and a cookie has none (RFC 9110 §15.5.2).
    if (check === null) {
      await reply.redirect(`${base}sign-in`, 303);
      return;
    }
    if (!check.valid) {
      // The session ended: the sign-in form, saying why, at the address asked for.
      clearConsoleCookie(reply, sessionCookie);
      await sendPage(reply, 200, signInPage(base, check.reason, signInButton));
      return;
    }
    sessions.set(request, check.session);
    noteKeyUse(keyUse, check.session, request);
  });
  // The form is parsed after onRequest: a change must carry the session's CSRF token. Signing out
  // need not: it ends only the session whose cookie came, from a console page (same origin,
  // checked above), and a tab left open from before the browser signed in again carries the
  // previous session's token, where "Sign out" should sign out, not refuse.
  app.addHook('preHandler', async (request, reply) => {
    const session = sessions.get(request);
    if (request.method !== 'POST' || session === undefined || request.routeOptions.url === `${base}sign-out`) return;
    const sent = (request.body as Record<string, unknown> | undefined)?.['csrf'];
    if (typeof sent !== 'string' || !constantTimeEquals(sent, session.csrfToken))
      await refuse(
        request,
        reply,
        session.caller,
        'The form was not sent from this session (CSRF token missing or wrong); nothing was changed.',
      );
  });
}

/**
 * An error no page caught (a change the database refused, a database outage, a form too large)
 * is answered with a console page, not the Admin API's JSON: the same status and headers
 * (Retry-After, when the answer has one) and logging as the API's answer (errorAnswer), in words
 * an administrator can act on. Set on the console's plugin, so only its routes answer this way.
 */
function answerErrorsWithPages(app: FastifyInstance, setup: ConsoleSetup): void {
  const { base, sessions } = setup;
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const answer = errorAnswer(error, request);
    const session = sessions.get(request);
    const frame = session === undefined ? null : { base, caller: session.caller, csrfToken: session.csrfToken };
    const change = request.method === 'POST';
    const committed = changeCommitted(request);
    let title: string;
    let message: string;
    if (answer.outage !== null) {
      title = 'Database unavailable';
      const what = answer.outage === 'unavailable' ? 'cannot be reached' : `cannot take changes (${answer.message})`;
      message = `The portal’s database ${what} just now${change ? ', so the change could not be made' : ''}. Try again shortly; the portal log has the details.`;
    } else if (answer.status >= 500) {
      title = change ? 'Change failed' : 'Failed';
      const done = committed === false ? ' Nothing was changed.' : '';
      message = `${change ? 'The change failed' : 'The page could not be made'} with an error of the portal’s; the portal log has the details.${done}`;
    } else {
      title = 'Not possible';
      message = answer.message;
    }
    setConsoleHeaders(reply);
    void reply.headers({ ...answer.headers });
    return sendPage(reply, answer.status, page(frame, title, problem(answer.status, message), base));
  });
}

/**
 * A key used in the console is used: its "last used" says so, as for an Admin API call.
 * Bookkeeping: it never delays or fails the page.
 */
function noteKeyUse(keyUse: AdminKeyUse, session: ActiveConsoleSession, request: FastifyRequest): void {
  const key = callerKey(session.caller);
  if (key === null) return;
  keyUse
    .note(key, request.ip)
    .catch((error: unknown) =>
      request.log.warn({ err: error, key: key.name }, 'could not note the use of an admin key'),
    );
}

/** The console's own files and Chart.js, never listed as a folder. */
async function serveAssets(app: FastifyInstance, base: string): Promise<void> {
  await app.register(fastifyStatic, {
    root: ASSETS,
    prefix: `${base}assets/`,
    decorateReply: false,
    index: false,
    cacheControl: false,
  });
  await app.register(fastifyStatic, {
    root: CHART_JS,
    prefix: `${base}assets/chart/`,
    decorateReply: false,
    index: false,
    cacheControl: false,
    allowedPath: (pathName) => pathName === '/chart.umd.min.js',
  });
}

/** Signing in with a key or the secret, or through OpenID Connect, and signing out. */
function registerSignIn(app: FastifyInstance, setup: ConsoleSetup): void {
  const { ctx, base, times, oidc, signInButton, throttle } = setup;
  // `…/admin` as typed leads to the console.
  app.get(base.slice(0, -1), async (_request, reply) => reply.redirect(base, 301));
  app.get(`${base}sign-in`, async (_request, reply) => sendPage(reply, 200, signInPage(base, null, signInButton)));
  app.post(`${base}sign-in`, async (request, reply) => {
    if (!sameOrigin(request))
      return sendPage(reply, 403, signInPage(base, 'Sign in from the console’s own page.', signInButton));
    // Too many refused credentials from this client lately: not even checked, the right one neither.
    const retryAfter = throttle.attempt(request.ip);
    if (retryAfter !== null) {
      const minutes = Math.ceil(retryAfter / 60);
      const why = `Too many failed sign-ins from your address; try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
      await recordThrottledSignIn(ctx, request.ip).catch((error: unknown) =>
        request.log.error({ err: error }, 'could not record a throttled console sign-in in the audit log'),
      );
      void reply.header('retry-after', String(retryAfter));
      return sendPage(reply, 429, signInPage(base, why, signInButton));
    }
    const presented = (request.body as Record<string, unknown> | undefined)?.['credential'];
    const result = await signIn(ctx, typeof presented === 'string' ? presented : '', request.ip, times);
    // 403: the credential was presented and refused (a 401 would need a WWW-Authenticate challenge).
    if (!result.ok) {
      if (throttle.exhausted(request.ip))
        request.log.warn(
          { ip: request.ip },
          'too many failed console sign-ins from one address: its sign-ins are refused for a while',
        );
      return sendPage(reply, 403, signInPage(base, result.reason, signInButton));
    }
    throttle.succeeded(request.ip);
    setSessionCookie(request, reply, result.session);
    return reply.redirect(base, 303);
  });
  const setSessionCookie = (request: FastifyRequest, reply: FastifyReply, session: ConsoleSession): void => {
    const sessionCookie = consoleCookie(request, COOKIE_NAME, base);
    void reply.setCookie(sessionCookie.name, session.token, {
      path: sessionCookie.path,
      httpOnly: true,
      sameSite: 'strict',
      secure: sessionCookie.secure,
      expires: session.expiresAt,
    });
  };
  if (oidc !== null) {
    registerOidcRoutes(app, {
      ctx,
      oidc,
      base,
      times,
      setSessionCookie,
      signInPage: (reply, status, why) => sendPage(reply, status, signInPage(base, why, signInButton)),
    });
  }
  app.post(`${base}sign-out`, async (request, reply) => {
    const sessionCookie = consoleCookie(request, COOKIE_NAME, base);
    const token = readConsoleCookie(request, sessionCookie);
    const method = token === undefined ? null : await signOut(ctx, token);
    clearConsoleCookie(reply, sessionCookie);
    // A session begun at the provider may end there too (signOutAtProvider), which sends the browser back.
    const atProvider =
      method === 'oidc' && oidc?.settings.signOutAtProvider === true ? await oidc.endSessionUrl() : null;
    if (atProvider === null || oidc === null) return reply.redirect(`${base}sign-in`, 303);
    // A page of our own that moves on, not a redirect: the console's form-action 'self' keeps a
    // form's answer from leading to another site.
    return sendPage(
      reply,
      200,
      page(
        null,
        'Signed out',
        html`<meta http-equiv="refresh" content="0; url=${atProvider.href}">
<p class="notice" role="status">Signed out of the console.</p>
<p><a class="button" href="${atProvider.href}">Sign out at ${oidc.settings.name} too</a></p>`,
        base,
      ),
    );
  });
}

/** Every page (GET) and action (POST), each answered with its page or a redirect after the change. */
function registerPages(app: FastifyInstance, setup: ConsoleSetup): void {
  const { ctx, base, sessions } = setup;
  const consoleRequest = (request: FastifyRequest): ConsoleRequest => {
    const session = sessions.get(request);
    if (session === undefined) throw new Error('console request without a session');
    const query = Object.fromEntries(
      Object.entries({
        ...(request.query as Record<string, unknown>),
        ...((request.body as Record<string, unknown> | undefined) ?? {}),
      }).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
    );
    return { ctx, request, session, query, frame: { base, caller: session.caller, csrfToken: session.csrfToken } };
  };
  const answer = async (reply: FastifyReply, request: ConsoleRequest, handler: ConsolePage) => {
    const result = await handler(request);
    if ('redirect' in result) return reply.redirect(`${base}${result.redirect}`, 303);
    return sendPage(reply, result.status ?? 200, page(request.frame, result.title, result.body, base));
  };
  for (const [name, handler] of Object.entries({ ...pageHandlers, ...devicePages, ...actionPages })) {
    app.get(`${base}${name}`, async (request, reply) => answer(reply, consoleRequest(request), handler));
  }
  for (const [name, handler] of Object.entries(actionHandlers)) {
    app.post(`${base}${name}`, async (request, reply) => answer(reply, consoleRequest(request), handler));
  }
}

/** The headers of every console answer. */
function setConsoleHeaders(reply: FastifyReply): void {
  void reply.headers({
    'content-security-policy': CONTENT_SECURITY_POLICY,
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    // same-origin, not no-referrer: with no-referrer the browser sends `Origin: null` on the console's own forms.
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
  });
}

/**
 * The console's 404 for a path under it that no page has (the server's not-found handler
 * answers it, as no route of the console matched), with the console's headers.
 */
export function consoleNotFound(reply: FastifyReply, base: string): FastifyReply {
  setConsoleHeaders(reply);
  return sendPage(reply, 404, page(null, 'Not found', problem(404, 'The console has no such page.'), base));
}

function sendPage(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(body);
}

/** A POST the browser says came from the console's own pages. */
function sameOrigin(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || site === 'none';
  const origin = request.headers.origin;
  if (typeof origin !== 'string') return true;
  try {
    return new URL(origin).host === request.headers.host;
  } catch {
    return false;
  }
}

/**
 * A request another site's page made other than by the person opening a page (an image, a
 * script, a fetch, a frame): the browser says so in Sec-Fetch-Site, -Mode and -Dest. Clients
 * that send none of them (curl, scripts with a session) are not browsers a page can steer.
 */
function embeddedFromElsewhere(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  if (site !== 'same-site' && site !== 'cross-site') return false;
  return request.headers['sec-fetch-mode'] !== 'navigate' || request.headers['sec-fetch-dest'] !== 'document';
}

/** The sign-in form, and the single sign-on button when `adminConsole.oidc` is set. */
function signInPage(
  base: string,
  why: string | null,
  sso: { readonly href: string; readonly label: string } | null,
): string {
  return page(
    null,
    'Sign in',
    html`${why === null ? '' : html`<p class="problem" role="alert" id="why">${why}</p>`}
<form method="post" action="${base}sign-in" class="sign-in">
<label for="credential">Admin key or Admin API secret</label>
<input id="credential" name="credential" type="password" autocomplete="off" required autofocus${why === null ? '' : html` aria-describedby="why"`}>
<button type="submit">Sign in</button>
</form>
<p class="hint">The key is sent once; the console then keeps a session cookie with the key's scope and profile limits.</p>
${sso === null ? '' : html`<p class="sso"><a class="button" href="${sso.href}">${sso.label}</a></p>`}`,
    base,
  );
}
