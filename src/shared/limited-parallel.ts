// Runs tasks with at most `limit` in flight, so a reconcile of thousands of peers does not
// open thousands of connections to one node at once.

/**
 * Runs `task` for each item, at most `limit` at once. After a task fails no new one starts, and
 * the promise rejects with the first failure only once every task started has settled: work a
 * caller runs under a lock never goes on after the caller gave the lock back.
 */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: { readonly error: unknown } | null = null;
  const worker = async (): Promise<void> => {
    while (failure === null && next < items.length) {
      const item = items[next++] as T;
      try {
        await task(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure !== null) throw (failure as { readonly error: unknown }).error;
}
