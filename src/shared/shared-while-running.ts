// One read for everyone who asks while it runs: Prometheus's scrape collects every gauge at once,
// and several gauges show figures of one database read (configurations per pool), which then
// runs once per scrape, not once per gauge, and is never older than the read itself.

/**
 * `read`, shared while it runs: a call while an earlier call's read is under way gets that
 * read's result (or failure); a call after it settled starts a new read.
 */
export function sharedWhileRunning<T>(read: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | undefined;
  return () => {
    running ??= read().finally(() => {
      running = undefined;
    });
    return running;
  };
}
