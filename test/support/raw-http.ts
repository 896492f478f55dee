// A bare HTTP/1.1 request through node:http, for what fetch cannot send: no Accept header at
// all (fetch always adds `Accept: */*`), HEAD/PROPFIND bodies, hand-made headers and bodies;
// and bytes written on a raw socket, for what node:http cannot send either.
import { once } from 'node:events';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';

export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  /** The body as received (a signed Apple profile is DER, not text). */
  readonly bytes: Buffer;
  json(): unknown;
}

export interface RawRequest {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
}

export function rawRequest(url: string, { method = 'GET', headers = {}, body }: RawRequest = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    // agent: false gives every request its own connection, so a connection the server closes
    // after an error cannot break the next request.
    const req = httpRequest(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        const text = bytes.toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, bytes, json: () => JSON.parse(text) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** Asserts nothing itself: returns the parsed `{"error": ...}` body, or throws when the shape is different. */
export function errorBody(text: string): string {
  const parsed: unknown = JSON.parse(text);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error(`error body is not a JSON object: ${text}`);
  const keys = Object.keys(parsed);
  const message = (parsed as Record<string, unknown>)['error'];
  if (keys.length !== 1 || typeof message !== 'string') throw new Error(`error body is not {"error": string}: ${text}`);
  return message;
}

/** One HTTP/1.1 response as read off a raw socket. */
export interface WireResponse {
  readonly status: number;
  /** Header names in lower case. */
  readonly headers: ReadonlyMap<string, string>;
  readonly body: string;
}

export interface SocketExchange {
  /** Every complete response, in the order they arrived (a 100 Continue counts as one). */
  readonly responses: readonly WireResponse[];
  /** Whether the server closed the connection (false: still open when `timeoutMs` ran out). */
  readonly closedByServer: boolean;
  /** Everything received, as Latin-1, for failure messages. */
  readonly received: string;
}

export interface SocketTarget {
  readonly host: string;
  readonly port: number;
  /** Source address to connect from, e.g. 127.0.0.2 to be another client than 127.0.0.1. */
  readonly localAddress?: string;
}

/**
 * Writes `bytes` on a fresh TCP connection exactly as given (what node:http refuses to send:
 * no Host, junk after a request, CONNECT) and reads until the server closes the connection
 * or `timeoutMs` passes.
 */
export async function socketExchange(
  target: SocketTarget,
  bytes: string | Buffer,
  timeoutMs = 5_000,
): Promise<SocketExchange> {
  const socket = connect({
    host: target.host,
    port: target.port,
    ...(target.localAddress === undefined ? {} : { localAddress: target.localAddress }),
  });
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {}); // a reset shows as 'close'
  await once(socket, 'connect');
  socket.write(bytes);
  const closedByServer = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
  socket.destroy();
  const received = Buffer.concat(chunks);
  return { responses: parseResponses(received), closedByServer, received: received.toString('latin1') };
}

/** Splits a byte stream into HTTP/1.1 responses (Content-Length or chunked bodies). */
export function parseResponses(bytes: Buffer): WireResponse[] {
  const responses: WireResponse[] = [];
  let rest: Buffer = bytes;
  for (;;) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd === -1) return responses;
    const [statusLine = '', ...lines] = rest.subarray(0, headEnd).toString('latin1').split('\r\n');
    const headers = new Map(
      lines.map((line) => [
        line.slice(0, line.indexOf(':')).trim().toLowerCase(),
        line.slice(line.indexOf(':') + 1).trim(),
      ]),
    );
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
    let body: Buffer = rest.subarray(headEnd + 4);
    let next: Buffer = Buffer.alloc(0);
    const length = headers.get('content-length');
    if (status === 100 || status === 204 || status === 304) {
      next = body;
      body = Buffer.alloc(0);
    } else if (length !== undefined) {
      next = body.subarray(Number(length));
      body = body.subarray(0, Number(length));
    } else if (headers.get('transfer-encoding')?.toLowerCase() === 'chunked') {
      const decoded: Buffer[] = [];
      let position = 0;
      for (;;) {
        const lineEnd = body.indexOf('\r\n', position);
        if (lineEnd === -1) break;
        const size = parseInt(body.subarray(position, lineEnd).toString('latin1'), 16);
        if (size === 0) {
          position = lineEnd + 4;
          break;
        }
        decoded.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
        position = lineEnd + 2 + size + 2;
      }
      next = body.subarray(position);
      body = Buffer.concat(decoded);
    }
    responses.push({ status, headers, body: body.toString('utf8') });
    if (next.length === 0) return responses;
    rest = next;
  }
}
