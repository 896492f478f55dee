// Waiting for something the portal does in the background (a delivery recorded, a device
// retired), checked again every 100 ms and failed with what was awaited; a promise given a
// deadline, so that a test fails instead of hanging; and the time limit every such wait is
// measured by.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A test's time limit, running from when it was taken. Measured on the monotonic clock
 * (performance.now()): the wall clock (Date.now()) may be set forward or back while a test waits
 * (NTP, a virtual machine's clock stepped), which would end the wait early or draw it out. Times
 * that the portal dates by its own clock are compared with Date.now(), not with this.
 */
export interface TimeLimit {
  readonly ms: number;
  /** Whether more than `ms` went by. */
  passed(): boolean;
  /** Milliseconds gone by since the limit was taken. */
  elapsedMs(): number;
}

export function timeLimit(ms: number): TimeLimit {
  const start = performance.now();
  const elapsedMs = (): number => performance.now() - start;
  return { ms, passed: () => elapsedMs() > ms, elapsedMs };
}

/** Resolves once `check` answers true; fails the test after `ms` with "`what` within `ms` ms". */
export async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const limit = timeLimit(ms);
  while (!(await check())) {
    if (limit.passed()) assert.fail(`${what} within ${ms} ms`);
    await sleep(100);
  }
}

/** Fails instead of hanging when what the test waits for never comes: rejects after `timeoutMs`. */
export async function within<T>(promise: Promise<T>, what: string, timeoutMs = 5_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${timeoutMs} ms: ${what}`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
