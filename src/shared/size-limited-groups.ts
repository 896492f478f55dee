// Splitting a list into as few groups as a size limit allows, in order, an item never split:
// peer changes into `wg set` command lines (argument bytes) and into control-socket operations.

/** `items` in order, in groups whose sizes add up to at most `limit`; an item larger than `limit` is a group of its own. */
export function sizeLimitedGroups<T>(items: readonly T[], sizeOf: (item: T) => number, limit: number): T[][] {
  const groups: T[][] = [];
  let current: T[] = [];
  let currentSize = 0;
  for (const item of items) {
    const size = sizeOf(item);
    if (current.length > 0 && currentSize + size > limit) {
      groups.push(current);
      current = [];
      currentSize = 0;
    }
    current.push(item);
    currentSize += size;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}
