// Waiting for something the portal does in the background (a delivery recorded, a device
// retired), checked again every 100 ms and failed with what was awaited; and a promise given a
// deadline, so that a test fails instead of hanging.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

/** Resolves once `check` answers true; fails the test after `ms` with "`what` within `ms` ms". */
export async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`${what} within ${ms} ms`);
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
