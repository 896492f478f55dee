// Appends one list to another without spreading it into a call: `list.push(...items)` fails past
// the arguments a call takes (about 125,000 here), and a user's configurations, or the events of
// revoking them, may be more.

export function appendAll<T>(list: T[], items: Iterable<T>): void {
  for (const item of items) list.push(item);
}
