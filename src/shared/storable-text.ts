// Text no database stores as it was sent, found anywhere in a parsed JSON body: a NUL character
// (PostgreSQL stores none in text and refuses one even as a query's parameter: a 500 there, where
// SQLite answered) or a lone surrogate (JSON's `"\ud800"` without its pair: stored as U+FFFD on
// PostgreSQL and as three on SQLite, text other than the one sent). The surfaces that take JSON
// (SCIM) refuse such a body before acting on it; Jamf Pro's webhooks refuse it only in the
// fields they store.

/** Half of a UTF-16 surrogate pair without its other half. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * What in `body` (a string or key of any depth) no database stores as sent, said for a refusal
 * (`a NUL character (\u0000) in a value`); null: nothing. Walked without recursion: the body
 * parser bounded its size, not its depth.
 */
export function unstorableTextIn(body: unknown): string | null {
  const pending: unknown[] = [body];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === 'string') {
      const problem = unstorable(value);
      if (problem !== null) return `${problem} in a value`;
    } else if (Array.isArray(value)) for (const entry of value as unknown[]) pending.push(entry);
    else if (typeof value === 'object' && value !== null)
      for (const [key, inner] of Object.entries(value)) {
        const problem = unstorable(key);
        if (problem !== null) return `${problem} in a name`;
        pending.push(inner);
      }
  }
  return null;
}

/** What in one text no database stores as sent (`a NUL character (\u0000)`); null: nothing. */
export function unstorable(text: string): string | null {
  if (text.includes('\0')) return 'a NUL character (\\u0000)';
  if (LONE_SURROGATE.test(text)) return 'a lone surrogate (\\ud800–\\udfff without its pair, not Unicode text)';
  return null;
}
