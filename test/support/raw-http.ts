// A bare HTTP/1.1 request through node:http, for what fetch cannot send: no Accept header at
// all (fetch always adds `Accept: */*`), HEAD/PROPFIND bodies, hand-made headers and bodies.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';

export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
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
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) });
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
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`error body is not a JSON object: ${text}`);
  const keys = Object.keys(parsed);
  const message = (parsed as Record<string, unknown>)['error'];
  if (keys.length !== 1 || typeof message !== 'string') throw new Error(`error body is not {"error": string}: ${text}`);
  return message;
}
