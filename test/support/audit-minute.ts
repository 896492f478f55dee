// Refusals of one source and reason are one audit row a minute (the first, counting the
// others): a test that expects one row for several refusals made on the real clock sends them
// within one minute.
import { setTimeout as delay } from 'node:timers/promises';

/** Waits for the next minute when less than `margin` ms are left of this one. */
export async function clearOfMinuteEnd(margin = 10_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < margin) await delay(left + 100);
}
