// Query strings and form bodies, decoded as the reference reads them: a value is UTF-8 text.
// fast-querystring (Fastify's and @fastify/formbody's parser) kept a percent-encoding it could
// not decode as it was sent: `user_id=j%F6rg` (Latin-1 ö) made the user `j%F6rg`, the same as
// `user_id=j%25F6rg`, where the reference answers `invalid value for "user_id"`. Here such a value
// is an UndecodableValue, which every parameter refuses (src/http/plumbing/params.ts).

/** A value whose percent-encoding is no UTF-8 text (Latin-1 bytes, half a surrogate pair). */
export class UndecodableValue {
  constructor(readonly sent: string) {}
}

/** One value of a form, or several for a name given more than once (as fast-querystring gives them). */
export type FormValue = string | UndecodableValue;

/** `a=1&b=x+y&a=2` as `{ a: ['1', '2'], b: 'x y' }`; an undecodable value as an UndecodableValue. */
export function parseFormText(text: string): Record<string, FormValue | FormValue[]> {
  // No prototype: a name such as `__proto__` or `constructor` is a name like any other.
  const values = Object.create(null) as Record<string, FormValue | FormValue[]>;
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const sentName = equals === -1 ? pair : pair.slice(0, equals);
    const sentValue = equals === -1 ? '' : pair.slice(equals + 1);
    // A name that cannot be decoded is no parameter's name: kept as sent, it matches none.
    const name = decoded(sentName) ?? sentName;
    const value = decoded(sentValue) ?? new UndecodableValue(sentValue);
    const earlier = values[name];
    if (earlier === undefined) values[name] = value;
    else if (Array.isArray(earlier)) earlier.push(value);
    else values[name] = [earlier, value];
  }
  return values;
}

/**
 * The text a form's part stands for (`+` a space), or null when its bytes, raw or percent-encoded,
 * are no UTF-8. A `%` without two hex digits is itself, as PHP and URLSearchParams read it.
 */
function decoded(part: string): string | null {
  // A form body reaches the parser decoded as UTF-8 already, its bytes that are not (a raw 0xF6,
  // Latin-1 ö) made U+FFFD; a client that means U+FFFD sends it percent-encoded.
  if (part.includes('\uFFFD')) return null;
  const spaced = part.includes('+') ? part.replaceAll('+', ' ') : part;
  if (!spaced.includes('%')) return spaced;
  try {
    return decodeURIComponent(spaced.replace(/%(?![0-9A-Fa-f]{2})/g, '%25'));
  } catch {
    return null;
  }
}
