// The bulk revocation benchmark's load generator, a process of its own so the portal's event
// loop is not shared with it: reads its input as JSON on stdin, first warms up (disable_user
// calls on other users for a few seconds, not measured, as the creates' warm-up), prints
// `warmed N` on a line of its own so the parent can start its CPU clocks, then sends one
// disable_user per measured user through the Admin API, `concurrency` at a time, and prints the
// latencies' summary and when the last call was answered (wall clock, ms since the epoch, for
// the parent to compare) as the last line.
import { text } from 'node:stream/consumers';
import { Pool } from 'undici';

export interface DisableSenderInput {
  /** The Admin API's base URL (…/admin/api/v1). */
  readonly adminBase: string;
  readonly secret: string;
  readonly concurrency: number;
  /** Disabled first, until `warmUpSeconds` have passed (or the list ends); not measured. */
  readonly warmUpUserIds: readonly string[];
  readonly warmUpSeconds: number;
  readonly userIds: readonly string[];
}

export interface DisableSenderOutput {
  readonly warmUpCalls: number;
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

interface Sent {
  readonly latencies: number[];
  readonly errors: number;
  readonly seconds: number;
  readonly lastAnswerAtMs: number;
}

/** One disable_user per user, `concurrency` at a time; no call starts after `untilMs` (performance.now()). */
async function disableAll(userIds: readonly string[], untilMs = Number.POSITIVE_INFINITY): Promise<Sent> {
  const latencies: number[] = [];
  let errors = 0;
  let next = 0;
  let lastAnswerAtMs = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: input.concurrency }, async () => {
      while (next < userIds.length && performance.now() < untilMs) {
        const userId = userIds[next++] ?? '';
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
  return { latencies, errors, seconds: (performance.now() - started) / 1000, lastAnswerAtMs };
}

const warmUp = await disableAll(input.warmUpUserIds, performance.now() + input.warmUpSeconds * 1000);
if (warmUp.errors > 0) throw new Error(`${warmUp.errors} of the warm-up's disable_user calls failed`);
console.log(`warmed ${warmUp.latencies.length}`);
const { latencies, errors, seconds, lastAnswerAtMs } = await disableAll(input.userIds);
await client.close();
latencies.sort((a, b) => a - b);
const at = (fraction: number): number =>
  Math.round((latencies[Math.min(latencies.length - 1, Math.floor(fraction * latencies.length))] ?? Number.NaN) * 10) /
  10;
const output: DisableSenderOutput = {
  warmUpCalls: warmUp.latencies.length,
  calls: latencies.length,
  errors,
  p50Ms: at(0.5),
  p99Ms: at(0.99),
  maxMs: at(1),
  seconds,
  lastAnswerAtMs,
};
console.log(JSON.stringify(output));
