// The operator's side door of the portal and of the node agent: Prometheus metrics at /metrics,
// /healthz (the process answers) and /readyz (it can do its work: for the portal, the database
// answers and its migrations are current) for load balancers and systemd. A listen address of
// its own (metrics.listen), so it never shares the Admin API's token or allow-list.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { messageOf } from './error-message.js';

export interface MetricsServerOptions {
  readonly host: string;
  readonly port: number;
  readonly registry: Registry;
  /** Null: ready. Otherwise why not (answered with 503). */
  readonly notReady: () => Promise<string | null>;
}

export interface RunningMetricsServer {
  /** `http://HOST:PORT/metrics`, with the real port. */
  readonly url: string;
  close(): Promise<void>;
}

export async function startMetricsServer(options: MetricsServerOptions): Promise<RunningMetricsServer> {
  const server = createServer((request, response) => void answer(options, request, response));
  // An idle scraper's keep-alive connection must not hold up shutdown.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: options.host, port: options.port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return { url: `http://${host}:${address.port}/metrics`, close: () => closeServer(server) };
}

async function answer(
  options: MetricsServerOptions,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const path = (request.url ?? '/').split('?')[0];
  const json = (status: number, body: Record<string, unknown>): void => {
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.setHeader('allow', 'GET, HEAD');
    json(405, { error: `method "${request.method ?? ''}" not allowed` });
    return;
  }
  try {
    switch (path) {
      case '/metrics': {
        const text = await options.registry.metrics();
        response.writeHead(200, { 'content-type': options.registry.contentType }).end(text);
        return;
      }
      case '/healthz':
        json(200, { status: 'ok' });
        return;
      case '/readyz': {
        const reason = await options.notReady();
        json(reason === null ? 200 : 503, reason === null ? { status: 'ready' } : { status: 'not ready', reason });
        return;
      }
      default:
        json(404, { error: `"${path ?? ''}" not found: /metrics, /healthz, /readyz` });
    }
  } catch (error) {
    json(500, { error: messageOf(error) });
  }
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
