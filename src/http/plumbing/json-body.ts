// JSON request bodies, for the surfaces that take them (SCIM, Jamf Pro's webhooks): parsed only
// when they nest at most MAX_JSON_DEPTH arrays and objects. Every walk over a parsed body (the
// surfaces' own, zod's, the SCIM library's) recurses once per level, so a body of `[[[[…` or
// `{"a":{"a":…` within the size limit ran them out of stack: a 500 instead of a 400. The depth
// is counted here without recursion, before the text is parsed, and a deeper body is refused
// with the surface's own error shape.
import type { FastifyInstance } from 'fastify';

/** Far more than any body a surface takes (a SCIM PatchOp nests some six levels, a Jamf Pro webhook four). */
export const MAX_JSON_DEPTH = 64;

export const NOT_JSON = 'the request body is not JSON';
export const TOO_DEEP = `the request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`;

/** True when `text` opens more than `limit` arrays and objects inside one another (brackets in strings do not count). */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c)
        index++; // a backslash: the next character is escaped, `\"` included
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) inString = true;
    else if (code === 0x5b || code === 0x7b) {
      depth++;
      if (depth > limit) return true;
    } else if (code === 0x5d || code === 0x7d) depth--;
  }
  return false;
}

/** The body's value; throws `refuse(message)` when it is not JSON or nests too deep. */
export function readJsonBody(text: string, refuse: (message: string) => Error): unknown {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw refuse(TOO_DEEP);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw refuse(NOT_JSON);
  }
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
    (_request, body: string, done) => {
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
