// What bench/million.ts measures with: Admin API calls timed one at a time or by workers,
// the portal's CPU time and peak RSS from /proc, and its reconcile figures from /metrics.
import type { Pool } from 'undici';
import { cpuTimeUs, round } from '../process-figures.js';

export const API_PATH = '/vpn-user-portal/admin/api/v1';

export interface Latencies {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly errors: number;
}

export interface Api {
  readonly pool: Pool;
  readonly auth: Record<string, string>;
}

/** One call; the status, the answer's text and the time to its last byte in ms. */
export async function call(
  api: Api,
  method: 'GET' | 'POST',
  target: string,
  form?: Record<string, string>,
): Promise<{ status: number; text: string; ms: number }> {
  const started = performance.now();
  const response = await api.pool.request({
    method,
    path: `${API_PATH}${target}`,
    headers: form === undefined ? api.auth : { ...api.auth, 'content-type': 'application/x-www-form-urlencoded' },
    ...(form === undefined ? {} : { body: new URLSearchParams(form).toString() }),
  });
  const text = await response.body.text();
  return { status: response.statusCode, text, ms: performance.now() - started };
}

/** `samples` calls one after the other (after `warmUp` not counted); a non-200 answer stops the bench. */
export async function timeCalls(api: Api, samples: number, next: () => string, warmUp = 5): Promise<Latencies> {
  const latencies: number[] = [];
  for (let index = 0; index < samples + warmUp; index++) {
    const target = next();
    const answer = await call(api, 'GET', target);
    if (answer.status !== 200) throw new Error(`${target}: ${answer.status} ${answer.text.slice(0, 300)}`);
    if (index >= warmUp) latencies.push(answer.ms);
  }
  return summarise(latencies, 0);
}

export function summarise(latencies: readonly number[], errors: number): Latencies {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (fraction: number) =>
    round(sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN);
  return { count: sorted.length, p50: at(0.5), p99: at(0.99), max: round(sorted.at(-1) ?? Number.NaN), errors };
}

export interface Creates extends Latencies {
  readonly perSecond: number;
  /** The portal process's CPU time (user + system) per create, in µs: the node push included. */
  readonly cpuPerCreateUs: number;
  /** Each create: when it was sent (ms since the epoch, as the portal's log lines say time) and how long it took. */
  readonly timeline: readonly { readonly sentAtMs: number; readonly ms: number; readonly ok: boolean }[];
}

/**
 * Creates by `workers` workers until `stop()` says so, each a new user on the next of the fifty
 * profiles; with `everyMs` each worker waits that long between its creates (a modest rate).
 */
export async function runCreates(
  api: Api,
  pid: number,
  options: { workers: number; stop: () => boolean; prefix: string; everyMs?: number },
): Promise<Creates> {
  const timeline: { sentAtMs: number; ms: number; ok: boolean }[] = [];
  let sequence = 0;
  const worker = async (): Promise<void> => {
    while (!options.stop()) {
      const index = sequence++;
      const profile = `p${String(index % 50).padStart(2, '0')}`;
      const sentAtMs = Date.now();
      const answer = await call(api, 'POST', '/create', { user_id: `${options.prefix}${index}`, profile_id: profile });
      timeline.push({ sentAtMs, ms: answer.ms, ok: answer.status === 200 });
      if (options.everyMs !== undefined) await new Promise((resolve) => setTimeout(resolve, options.everyMs));
    }
  };
  const cpuBefore = cpuTimeUs(pid);
  const started = performance.now();
  await Promise.all(Array.from({ length: options.workers }, worker));
  const seconds = (performance.now() - started) / 1000;
  return {
    ...summarise(
      timeline.map((create) => create.ms),
      timeline.filter((create) => !create.ok).length,
    ),
    perSecond: round(timeline.length / seconds),
    cpuPerCreateUs: round((cpuTimeUs(pid) - cpuBefore) / Math.max(1, timeline.length)),
    timeline,
  };
}

export const forSeconds = (seconds: number): (() => boolean) => {
  const deadline = performance.now() + seconds * 1000;
  return () => performance.now() >= deadline;
};

/** Per node: the summed duration of its reconcile passes (s), for the nodes a pass reached. */
export async function reconciledNodes(metricsPort: number): Promise<Map<string, number>> {
  const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).catch(() => undefined);
  if (response === undefined || !response.ok) return new Map();
  const text = await response.text();
  const reached = new Set(
    [...text.matchAll(/^vpn_portal_node_last_reconcile_success_timestamp_seconds\{node="(\d+)"\}/gm)].map(
      (match) => match[1] ?? '',
    ),
  );
  const durations = new Map<string, number>();
  for (const match of text.matchAll(/^vpn_portal_reconcile_duration_seconds_sum\{node="(\d+)"\} (\S+)/gm)) {
    const node = match[1] ?? '';
    if (reached.has(node)) durations.set(node, Number(match[2]));
  }
  return durations;
}

export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutS: number,
  everyMs = 100,
): Promise<T> {
  const deadline = performance.now() + timeoutS * 1000;
  while (performance.now() < deadline) {
    const value = await check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`${what}: not within ${timeoutS} s`);
}
