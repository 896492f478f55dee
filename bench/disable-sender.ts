// The bulk revocation benchmark's load generator, a process of its own so the portal's event
// loop is not shared with it: reads its input as JSON on stdin, sends one disable_user per
// user through the Admin API, `concurrency` at a time, and prints the latencies' summary and
// when the last call was answered (wall clock, ms since the epoch, for the parent to compare).
import { text } from 'node:stream/consumers';
import { Pool } from 'undici';

export interface DisableSenderInput {
  /** The Admin API's base URL (…/admin/api/v1). */
  readonly adminBase: string;
  readonly secret: string;
  readonly concurrency: number;
  readonly userIds: readonly string[];
}

export interface DisableSenderOutput {
  readonly calls: number;
  readonly errors: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly seconds: number;
  readonly lastAnswerAtMs: number;
}

const input = JSON.parse(await text(process.stdin)) as DisableSenderInput;
const base = new URL(input.adminBase);
const client = new Pool(base.origin, { connections: input.concurrency, pipelining: 1 });
const headers = { authorization: `Bearer ${input.secret}`, 'content-type': 'application/x-www-form-urlencoded' };
const latencies: number[] = [];
let errors = 0;
let next = 0;
let lastAnswerAtMs = 0;
const started = performance.now();
await Promise.all(
  Array.from({ length: input.concurrency }, async () => {
    while (next < input.userIds.length) {
      const userId = input.userIds[next++] ?? '';
      const sent = performance.now();
      const response = await client.request({
        method: 'POST',
        path: `${base.pathname}/disable_user`,
        headers,
        body: new URLSearchParams({ user_id: userId }).toString(),
      });
      await response.body.arrayBuffer();
      latencies.push(performance.now() - sent);
      lastAnswerAtMs = Date.now();
      if (response.statusCode >= 300) errors++;
    }
  }),
);
const seconds = (performance.now() - started) / 1000;
await client.close();
latencies.sort((a, b) => a - b);
const at = (fraction: number): number =>
  Math.round((latencies[Math.min(latencies.length - 1, Math.floor(fraction * latencies.length))] ?? Number.NaN) * 10) /
  10;
const output: DisableSenderOutput = {
  calls: latencies.length,
  errors,
  p50Ms: at(0.5),
  p99Ms: at(0.99),
  maxMs: at(1),
  seconds,
  lastAnswerAtMs,
};
console.log(JSON.stringify(output));
