// A stand-in for the portal's Node API in OpenVPN agent tests: a real HTTP server that hands
// out the server files the test sets, answers /connect with OK or ERR as the test decides per
// common name, and records every call. Only the portal's policy is replaced; the wire format is
// the real one (form bodies, X-Node-Number + Bearer, plain OK/ERR answers).
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CONNECT_ALLOWED,
  CONNECT_REFUSED,
  NODE_API_PATHS,
  type ServerConfigAnswer,
} from '../../src/protocol/node-api.js';
import { timeLimit } from './until.js';

/** One entry of server_config's "openvpn" list, as the wire protocol says. */
export type OpenVpnFileJson = NonNullable<ServerConfigAnswer['openvpn']>[number];

export type FormCall = Readonly<Record<string, string>>;

export class PortalStandIn {
  /** What server_config answers in "openvpn". */
  files: OpenVpnFileJson[] = [];
  /** Common names /connect allows; every other one gets ERR. */
  readonly allowed = new Set<string>();
  readonly serverConfigCalls: FormCall[] = [];
  readonly connectCalls: FormCall[] = [];
  readonly disconnectCalls: FormCall[] = [];
  readonly #nodeKey: string;
  readonly #nodeNumber: number;
  readonly #host: string;
  #port = 0;
  #server: Server;

  private constructor(host: string, nodeKey: string, nodeNumber: number) {
    this.#host = host;
    this.#nodeKey = nodeKey;
    this.#nodeNumber = nodeNumber;
    this.#server = this.#newServer();
  }

  static async start(options: { host: string; nodeKey: string; nodeNumber: number }): Promise<PortalStandIn> {
    const portal = new PortalStandIn(options.host, options.nodeKey, options.nodeNumber);
    await portal.#listen(0);
    return portal;
  }

  get apiUrl(): string {
    return `http://${this.#host}:${this.#port}/vpn-user-portal/node-api.php`;
  }

  /** Stops answering: connections are refused until goOnline(). */
  async goOffline(): Promise<void> {
    const closed = once(this.#server, 'close');
    this.#server.close();
    this.#server.closeAllConnections();
    await closed;
  }

  async goOnline(): Promise<void> {
    this.#server = this.#newServer();
    await this.#listen(this.#port);
  }

  async close(): Promise<void> {
    if (!this.#server.listening) return;
    await this.goOffline();
  }

  /** Waits until `read()` returns something other than undefined. */
  async waitFor<T>(read: () => T | undefined, what: string, timeoutMs = 20_000): Promise<T> {
    const limit = timeLimit(timeoutMs);
    for (;;) {
      const value = read();
      if (value !== undefined) return value;
      if (limit.passed()) throw new Error(`the portal stand-in did not see ${what} within ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  #newServer(): Server {
    return createServer((request, response) => {
      void this.#handle(request, response).catch(() => response.destroy());
    });
  }

  async #listen(port: number): Promise<void> {
    this.#server.listen(port, this.#host);
    await once(this.#server, 'listening');
    this.#port = (this.#server.address() as AddressInfo).port;
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
    if (
      request.headers.authorization !== `Bearer ${this.#nodeKey}` ||
      request.headers['x-node-number'] !== String(this.#nodeNumber)
    ) {
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"authentication required"}');
      return;
    }
    const call = (request.url ?? '').replace(/^\/vpn-user-portal\/node-api\.php/, '');
    if (request.method === 'POST' && call === NODE_API_PATHS.serverConfig) {
      this.serverConfigCalls.push(form);
      const answer: ServerConfigAnswer = { wireguard: null, openvpn: this.files };
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      return;
    }
    if (request.method === 'POST' && call === NODE_API_PATHS.connect) {
      this.connectCalls.push(form);
      response
        .writeHead(200, { 'content-type': 'text/plain' })
        .end(this.allowed.has(form['common_name'] ?? '') ? CONNECT_ALLOWED : CONNECT_REFUSED);
      return;
    }
    if (request.method === 'POST' && call === NODE_API_PATHS.disconnect) {
      this.disconnectCalls.push(form);
      response.writeHead(200, { 'content-type': 'text/plain' }).end('OK');
      return;
    }
    response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
  }
}
