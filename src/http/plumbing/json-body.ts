// JSON request bodies, for the surfaces that take them (SCIM, Jamf Pro's webhooks): parsed only
// when they nest at most MAX_JSON_DEPTH arrays and objects. Every walk over a parsed body (the
// surfaces' own, zod's, the SCIM library's) recurses once per level, so a body of `[[[[…` or
// `{"a":{"a":…` within the size limit ran them out of stack: a 500 instead of a 400; and a
// body of millions of tiny values (`[{},{},…]`) made JSON.parse exhaust the heap. The depth
// and the number of values are counted without recursion (src/shared/json-shape.ts), before
// the text is parsed, and a body over either bound is refused with the surface's own error
// shape, as is one that names a member twice in one object.
import type { FastifyInstance } from 'fastify';
import { jsonShapeProblem } from '../../shared/json-shape.js';

/** Far more than any body a surface takes (a SCIM PatchOp nests some six levels, a Jamf Pro webhook four). */
export const MAX_JSON_DEPTH = 64;

/**
 * Values a body may hold, counted as the arrays and objects it opens plus the commas between
 * entries (each entry of a list or member of an object after its first follows one). The
 * largest body a surface takes is a SCIM group of 100,000 members (MAX_GROUP_MEMBERS), each an
 * object of a few keys (`value`, `display`, `type`, maybe `$ref`): some five each. JSON.parse
 * of 16 MiB of `[{},{},…]` (5.6 million objects) took more than the portal's 192 MB heap.
 */
export const MAX_JSON_VALUES = 600_000;

export const NOT_JSON = 'the request body is not JSON';
export const TOO_DEEP = `the request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`;
export const TOO_MANY_VALUES = `the request body holds more than ${MAX_JSON_VALUES.toLocaleString('en')} values (arrays, objects and entries)`;

/** True when `text` opens more than `limit` arrays and objects inside one another (brackets in strings do not count). */
export function nestsDeeperThan(text: string, limit: number): boolean {
  return jsonShapeProblem(text, limit, Number.POSITIVE_INFINITY) === 'too-deep';
}

/**
 * The first name one object of `text` holds twice (decoded: `"a"` and `"\u0061"` are one name);
 * null when no object does. For a parsed body: JSON.parse keeps the last of the two, while a
 * proxy, a log or an identity provider's own check may read the first, so `{"active": true,
 * "active": false}` meant one thing to them and another to the portal (RFC 8259 leaves it open;
 * I-JSON, RFC 7493, forbids it). The nesting is bounded by jsonShapeProblem before.
 */
export function duplicateName(text: string): string | null {
  /** Per open array or object, innermost last: an object's names so far; null for an array. */
  const open: (Set<string> | null)[] = [];
  let nameNext = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code === 0x22) {
      const start = index;
      for (index++; index < text.length; index++) {
        const inside = text.charCodeAt(index);
        if (inside === 0x5c) index++;
        else if (inside === 0x22) break;
      }
      const names = open[open.length - 1];
      if (!nameNext || names == null) continue;
      const quoted = text.slice(start, index + 1);
      const name = quoted.includes('\\') ? (JSON.parse(quoted) as string) : quoted.slice(1, -1);
      if (names.has(name)) return name;
      names.add(name);
      nameNext = false;
    } else if (code === 0x7b) {
      open.push(new Set());
      nameNext = true;
    } else if (code === 0x5b) {
      open.push(null);
      nameNext = false;
    } else if (code === 0x7d || code === 0x5d) {
      open.pop();
      nameNext = false;
    } else if (code === 0x2c) nameNext = open[open.length - 1] != null;
  }
  return null;
}

/**
 * The body's value; throws `refuse(message)` when it is not JSON, nests too deep, holds too many
 * values or names a member twice in one object.
 */
export function readJsonBody(text: string, refuse: (message: string) => Error): unknown {
  const problem = jsonShapeProblem(text, MAX_JSON_DEPTH, MAX_JSON_VALUES);
  if (problem === 'too-deep') throw refuse(TOO_DEEP);
  if (problem === 'too-many-values') throw refuse(TOO_MANY_VALUES);
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    throw refuse(NOT_JSON);
  }
  const twice = duplicateName(text);
  if (twice !== null) throw refuse(`the request body names ${JSON.stringify(twice)} twice in one object`);
  return value;
}

/**
 * Makes `app` parse bodies of `contentTypes` as JSON, read by readJsonBody; `refuse` makes the
 * surface's own error (400) of the message, which its error handler answers in its own shape.
 */
export function addJsonBodyParser(
  app: FastifyInstance,
  contentTypes: readonly string[],
  refuse: (message: string) => Error,
  options: { readonly bodyLimit?: number } = {},
): void {
  app.addContentTypeParser(
    [...contentTypes],
    { parseAs: 'string', ...(options.bodyLimit === undefined ? {} : { bodyLimit: options.bodyLimit }) },
    (request, body: string, done) => {
      // A DELETE carries no body, but clients that name a Content-Type on every request send
      // one with it: refused, a directory's deprovisioning would never go through.
      if (request.method === 'DELETE' && body.trim() === '') {
        done(null, undefined);
        return;
      }
      let value: unknown;
      try {
        value = readJsonBody(body, refuse);
      } catch (error) {
        done(error instanceof Error ? error : new Error(String(error)), undefined);
        return;
      }
      done(null, value);
    },
  );
}
