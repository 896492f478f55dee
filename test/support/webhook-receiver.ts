// A webhook receiver on loopback, as a helpdesk or SIEM runs one: it records every request,
// verifies its signature the way docs/webhooks.md tells receivers to, and answers what the test
// says (a status, or nothing until the test lets it, to hold a delivery in flight).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { webhookPayloadSchema, type WebhookPayload } from '../../src/protocol/webhooks.js';
import { timeLimit } from './until.js';

export interface ReceivedWebhook {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly payload: WebhookPayload;
  /** When it arrived, in milliseconds by the receiver's clock. */
  readonly arrivedAt: number;
}

/** What to answer a request: a status, or a promise of one (a held request). */
export type Answer = (webhook: ReceivedWebhook, index: number) => number | Promise<number>;

/**
 * The verification of docs/webhooks.md: the header's `t` within `toleranceSeconds` of now and one of its
 * `v1` values equal to HMAC-SHA-256 of `t.body` under `secret`, compared in constant time.
 */
export function verifyWebhookSignature(
  header: string,
  body: string,
  secret: string,
  nowSeconds: number,
  toleranceSeconds = 300,
): boolean {
  const parts = header.split(',').map((part) => part.split('=', 2) as [string, string | undefined]);
  const timestamp = Number(parts.find(([key]) => key === 't')?.[1]);
  if (!Number.isInteger(timestamp) || Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest();
  return parts.some(
    ([key, value = '']) =>
      key === 'v1' && /^[0-9a-f]{64}$/.test(value) && timingSafeEqual(Buffer.from(value, 'hex'), expected),
  );
}

export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  readonly #server: Server;
  #answer: Answer;
  readonly url: string;

  private constructor(server: Server, answer: Answer) {
    this.#server = server;
    this.#answer = answer;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  }

  /** `now`: the receiver's clock (default: the real one). */
  static async start(answer: Answer = () => 200, now: () => number = Date.now): Promise<WebhookReceiver> {
    let receiver: WebhookReceiver | null = null;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const webhook = {
          headers: request.headers,
          body,
          payload: webhookPayloadSchema.parse(JSON.parse(body)),
          arrivedAt: now(),
        };
        const self = receiver as WebhookReceiver;
        const index = self.received.push(webhook) - 1;
        void Promise.resolve(self.#answer(webhook, index)).then((status) => {
          response.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'receiver error');
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new WebhookReceiver(server, answer);
    return receiver;
  }

  answerWith(answer: Answer): void {
    this.#answer = answer;
  }

  /** The events received so far, by type. */
  types(): string[] {
    return this.received.map((webhook) => webhook.payload.type);
  }

  async waitFor(
    predicate: (received: readonly ReceivedWebhook[]) => boolean,
    what: string,
    timeoutMs = 20_000,
  ): Promise<void> {
    const limit = timeLimit(timeoutMs);
    while (!predicate(this.received)) {
      if (limit.passed())
        throw new Error(`the receiver did not get ${what} within ${timeoutMs} ms; it got: ${this.types().join(', ')}`);
      await sleep(25);
    }
  }

  /** Waits until `count` requests arrived, then a little longer to see that no more come. */
  async waitForCount(count: number, what: string, timeoutMs = 20_000): Promise<void> {
    await this.waitFor((received) => received.length >= count, `${count} requests (${what})`, timeoutMs);
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
