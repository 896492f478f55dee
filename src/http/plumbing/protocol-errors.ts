// Answers for what Node's HTTP server would otherwise answer itself, with an empty body or
// none at all: bytes that are not HTTP, oversized headers, requests that take too long, an
// `Expect` other than 100-continue, CONNECT. Each gets the portal's JSON `{"error": "..."}`.
// A refusal of bytes on a connection never overtakes the answer to a request that is already
// running on it: the client must learn the outcome of what the portal did (a create that
// committed hands over its file), so that answer goes out first, then the refusal, then the
// connection closes.
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { RunningRequests } from './running-requests.js';

/** An HTTP/1.1 response written straight onto a socket, closing the connection. */
function rawJsonResponse(status: number, message: string): string {
  const body = JSON.stringify({ error: message });
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/** The status and message for an error Node's HTTP parser or its timeouts raised. */
function answerFor(error: NodeJS.ErrnoException, requestTimeoutMs: number): { status: number; message: string } {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, message: 'request headers too large' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, message: 'chunk extensions too large' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, message: `request not complete within ${requestTimeoutMs / 1000} s` };
    default:
      return { status: 400, message: 'malformed HTTP request' };
  }
}

export interface ProtocolErrorOptions {
  /** For the 408 message: how long a request may take to arrive. */
  readonly requestTimeoutMs: number;
  /** The requests running on each connection (installed on the same server). */
  readonly running: RunningRequests;
  readonly logger: Logger;
}

/**
 * The JSON answers: `onClientError` is Fastify's `clientErrorHandler` (Fastify makes it the
 * server's 'clientError' listener); `install` adds the rest once Fastify has made the server.
 */
export class ProtocolErrorAnswers {
  readonly #options: ProtocolErrorOptions;
  /** Connections whose refusal waits for the answers of the requests running on them. */
  readonly #refusing = new WeakSet<Socket>();

  constructor(options: ProtocolErrorOptions) {
    this.#options = options;
  }

  install(server: Server): void {
    // Node answers any Expect but 100-continue with an empty 417 unless someone listens.
    server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
      const body = JSON.stringify({
        error: `cannot meet "Expect: ${request.headers.expect ?? ''}"; only "100-continue" is supported`,
      });
      response.writeHead(417, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        connection: 'close',
      });
      response.end(body);
    });

    // Node closes a CONNECT without a word unless someone listens; the socket is ours from here.
    server.on('connect', (_request: IncomingMessage, socket: Duplex) => {
      socket.on('error', () => {});
      socket.end(rawJsonResponse(501, 'CONNECT is not supported: the portal is not a proxy'), () => socket.destroy());
    });
  }

  readonly onClientError = (error: NodeJS.ErrnoException, socket: Socket): void => {
    if (this.#refusing.has(socket)) {
      // Node reports every further chunk after a parse error again; the refusal is queued already.
      if (error.code === 'ECONNRESET') socket.destroy();
      return;
    }
    if (error.code === 'ECONNRESET' || socket.destroyed || !socket.writable) {
      socket.destroy();
      return;
    }
    const { status, message } = answerFor(error, this.#options.requestTimeoutMs);
    this.#options.logger.debug(
      { code: error.code, remoteAddress: socket.remoteAddress, status },
      'HTTP request refused before routing',
    );
    const exchanges = this.#options.running.on(socket);
    // Requests that arrived whole are being handled: their answers go first, then the refusal.
    if (exchanges.length > 0 && exchanges.every((exchange) => exchange.request.complete)) {
      this.#refusing.add(socket);
      this.#options.running.whenIdle(socket, () => {
        if (socket.writable) socket.end(rawJsonResponse(status, message), () => socket.destroy());
        else socket.destroy();
      });
      return;
    }
    // Otherwise the last request can never complete (its body is late or broken): it ends here.
    // An answer already under way cannot be followed by another on the same connection.
    if (exchanges.every((exchange) => !exchange.response.headersSent)) socket.write(rawJsonResponse(status, message));
    socket.destroy();
  };
}
