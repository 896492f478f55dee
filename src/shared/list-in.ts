// Grouping rows into lists by a key without copying a list for each row appended (a copy per
// row is quadratic in a group's size: a node's thousands of confirmations, say).

/** The list `map` holds under `key`, made empty first if it has none (appended to in place). */
export function listIn<K, V>(map: Map<K, V[]>, key: K): V[] {
  let list = map.get(key);
  if (list === undefined) {
    list = [];
    map.set(key, list);
  }
  return list;
}
