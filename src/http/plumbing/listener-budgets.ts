// The one way the portal makes an HTTP listener (the main one, the mutual-TLS enrollment one):
// every listener gets the same budgets from here, so a new one cannot forget them — headers and
// body within listen.requestTimeout (a TLS handshake too), idle keep-alives closed after
// listen.keepAliveTimeout, at most listen.maxConnectionsPerAddress connections per address, a
// 64 KiB body limit, JSON answers for what Node would answer itself, and a close that answers
// what has arrived and then drops the slow senders.
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { constants as cryptoConstants } from 'node:crypto';
import { createServer as createHttpsServer } from 'node:https';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import type { Logger } from 'pino';
import type { ListenSettings } from '../../config/portal-config.js';
import type { AddressAllowList } from '../../net/address-allow-list.js';
import { ConnectionsPerAddress } from './connections-per-address.js';
import { parseFormText } from './form-text.js';
import { ProtocolErrorAnswers } from './protocol-errors.js';
import { RunningRequests } from './running-requests.js';

/** Form bodies are small on every listener; anything larger is refused with 413. */
export const BODY_LIMIT_BYTES = 64 * 1024;
/** How often Node looks for requests past listen.requestTimeout (its default, 30 s, would let them linger). */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

/** What the budgets leave to each listener to choose. */
export interface ListenerOptions {
  /** Which direct peers' X-Forwarded-For is believed. */
  readonly trustProxy?: (address: string) => boolean;
  readonly exposeHeadRoutes?: boolean;
  readonly frameworkErrors?: FastifyServerOptions['frameworkErrors'];
}

export interface ListenerBudgetSettings {
  readonly listen: ListenSettings;
  readonly logger: Logger;
  /** Direct peers without a connection cap (trusted reverse proxies). */
  readonly uncapped: AddressAllowList;
  /** The server's certificate and key: an https listener, which may also ask for a client certificate. */
  readonly tls?: {
    readonly cert: string;
    readonly key: string;
    readonly requestCert: boolean;
    readonly rejectUnauthorized: boolean;
  };
}

/** A Fastify instance (http, or https when `settings.tls` is given) with every budget in place. */
export function budgetedListener(
  settings: ListenerBudgetSettings,
  options: ListenerOptions = {},
): FastifyInstance<Server, IncomingMessage, ServerResponse, Logger> {
  const { listen } = settings;
  const running = new RunningRequests();
  const protocolErrors = new ProtocolErrorAnswers({
    requestTimeoutMs: listen.requestTimeoutMs,
    running,
    logger: settings.logger,
  });
  const serverOptions = {
    // A request without Host gets the listener's JSON 400, not Node's empty one.
    requireHostHeader: false,
    // Slow senders are cut with 408: headers and body alike must arrive within requestTimeout.
    headersTimeout: listen.requestTimeoutMs,
    requestTimeout: listen.requestTimeoutMs,
    connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
  };
  const { tls } = settings;
  const app = Fastify({
    ...options,
    loggerInstance: settings.logger,
    // One line per request at info is noise and cost: one line at debug instead.
    logController: new DebugRequestLog(),
    bodyLimit: BODY_LIMIT_BYTES,
    // A query string's value that is no UTF-8 text is refused, not kept as sent (form-text.ts).
    routerOptions: { querystringParser: parseFormText },
    // Bytes that are not valid HTTP (bad Content-Length, junk behind a request, ...) get the JSON error shape.
    clientErrorHandler: protocolErrors.onClientError,
    // The server is made here, http or https alike, so that both get the same options.
    serverFactory: (handler) => {
      const server: Server =
        tls === undefined
          ? createHttpServer(serverOptions, handler)
          : // A TLS handshake that does not finish within requestTimeout is dropped (Node's default waits 120 s).
            createHttpsServer(
              {
                ...serverOptions,
                ...tls,
                handshakeTimeout: listen.requestTimeoutMs,
                // A resumed session brings the client's certificate but not the intermediates it
                // sent, so its chain could not be followed: a client asked for a certificate
                // does a full handshake each time (no session tickets; Node keeps no session cache).
                ...(tls.requestCert ? { secureOptions: cryptoConstants.SSL_OP_NO_TICKET } : {}),
              },
              handler,
            );
      // Node's defaults: no request timeout, 5 s keep-alive.
      server.requestTimeout = listen.requestTimeoutMs;
      server.keepAliveTimeout = listen.keepAliveTimeoutMs;
      return server;
    },
  });
  const server = app.server;
  running.install(server);
  protocolErrors.install(server);
  // Node stops timing out slow requests once the server closes, and the close waits for every
  // connection: answer what has arrived, then drop the rest (slow senders, idle keep-alives).
  app.addHook('preClose', async () => {
    void running.answered().then(() => server.closeAllConnections());
  });
  new ConnectionsPerAddress({
    maxPerAddress: listen.maxConnectionsPerAddress,
    uncapped: settings.uncapped,
    logger: settings.logger,
  }).install(server);
  return app;
}

/** Fastify's request lines: none when a request arrives, one at debug when it is answered; errors as Fastify logs them. */
class DebugRequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error !== null && error !== undefined) {
      super.requestCompleted(error, request, reply);
      return;
    }
    request.log.debug(
      {
        method: request.method,
        url: withoutSecretValues(request.url),
        statusCode: reply.statusCode,
        responseTimeMs: Math.round(reply.elapsedTime),
      },
      'request answered',
    );
  }
}

/**
 * Query parameters whose values are secrets: those of a sign-in (an OpenID callback's one-time
 * code and state), and an enrollment token that a device's script put in the URL of `enroll`
 * instead of its form (refused, but its URL is still this line's).
 */
const SECRET_QUERY_PARAMETERS = new Set([
  'code',
  'state',
  'session_state',
  'id_token',
  'access_token',
  'token',
  'enrollment_token',
]);

/** The request's path and query as logged: the values of sign-in secrets replaced by `***`. */
function withoutSecretValues(url: string): string {
  const start = url.indexOf('?');
  if (start === -1) return url;
  const query = url
    .slice(start + 1)
    .split('&')
    .map((pair) => {
      const name = pair.split('=', 1)[0] ?? '';
      return SECRET_QUERY_PARAMETERS.has(decodedName(name).toLowerCase()) ? `${name}=***` : pair;
    });
  return `${url.slice(0, start + 1)}${query.join('&')}`;
}

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replaceAll('+', ' '));
  } catch {
    return name;
  }
}
