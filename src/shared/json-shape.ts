// How costly a JSON text is to parse, read without parsing it: JSON.parse builds every value it
// holds at once, and recursive walks over the result go down once per level, so text within a
// byte limit may still hold millions of tiny values (`[0,0,…]`, `[{},{},…]`) that exhaust the
// heap, or nest deeper than the stack goes. Used by the surfaces' JSON bodies
// (src/http/plumbing/json-body.ts) and the node listings the portal reads
// (src/node-client/daemon-client.ts).

/** What makes a JSON text too costly to parse: too deep, too many values; null: neither. */
export type JsonShapeProblem = 'too-deep' | 'too-many-values' | null;

/**
 * Scans `text` once, without recursion or parsing: more than `maxDepth` arrays and objects
 * inside one another, or more than `maxValues` values (arrays, objects and commas outside
 * strings)? Brackets and commas inside strings do not count.
 */
export function jsonShapeProblem(text: string, maxDepth: number, maxValues: number): JsonShapeProblem {
  let depth = 0;
  let values = 0;
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
      if (depth > maxDepth) return 'too-deep';
      if (++values > maxValues) return 'too-many-values';
    } else if (code === 0x5d || code === 0x7d) depth--;
    else if (code === 0x2c && ++values > maxValues) return 'too-many-values';
  }
  return null;
}
