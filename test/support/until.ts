// Waiting for something the portal does in the background (a delivery recorded, a device
// retired), checked again every 100 ms and failed with what was awaited.
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
