// The requests the portal's HTTP server is working on, per connection. Node parses pipelined
// bytes as they arrive, so junk behind a request raises its error while that request still
// runs (protocol-errors.ts lets its answer go first); and at shutdown the portal answers every
// request that has arrived whole before it drops the connections that are left.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface Exchange {
  readonly request: IncomingMessage;
  readonly response: ServerResponse;
  /** Resolves once the answer is sent, or the connection is gone. */
  readonly settled: Promise<void>;
}

export class RunningRequests {
  readonly #all = new Set<Exchange>();
  readonly #bySocket = new WeakMap<Socket, Set<Exchange>>();
  readonly #whenIdle = new WeakMap<Socket, () => void>();

  /** Tracks every request `server` receives (a 'request' listener after Fastify's own). */
  install(server: Server): void {
    server.on('request', (request: IncomingMessage, response: ServerResponse) => this.#track(request, response));
  }

  /** The requests on `socket` whose answer is not sent yet, oldest first. */
  on(socket: Socket): readonly Exchange[] {
    return [...(this.#bySocket.get(socket) ?? [])];
  }

  /** Runs `then` once every request now running on `socket` has its answer sent. */
  whenIdle(socket: Socket, then: () => void): void {
    this.#whenIdle.set(socket, then);
  }

  /**
   * Resolves once every request that has arrived whole has its answer sent. Requests still
   * arriving are not waited for: they have not run, so dropping them changes nothing.
   */
  async answered(): Promise<void> {
    await Promise.all(
      [...this.#all].filter((exchange) => exchange.request.complete).map((exchange) => exchange.settled),
    );
  }

  #track(request: IncomingMessage, response: ServerResponse): void {
    const socket = request.socket;
    let running = this.#bySocket.get(socket);
    if (running === undefined) {
      running = new Set();
      this.#bySocket.set(socket, running);
    }
    const onSocket = running;
    let settle = (): void => {};
    const exchange: Exchange = { request, response, settled: new Promise<void>((resolve) => (settle = resolve)) };
    onSocket.add(exchange);
    this.#all.add(exchange);
    const settled = (): void => {
      if (!onSocket.delete(exchange)) return;
      this.#all.delete(exchange);
      settle();
      if (onSocket.size > 0) return;
      const then = this.#whenIdle.get(socket);
      this.#whenIdle.delete(socket);
      then?.();
    };
    // 'finish': the answer was handed to the socket; 'close' alone: the connection went first.
    response.once('finish', settled);
    response.once('close', settled);
  }
}
