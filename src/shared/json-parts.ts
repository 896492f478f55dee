// JSON written as a list of parts that are sent one after another, never joined: a listing of
// 100,000 configurations kept in memory as Buffers goes out as it is, with a few bytes of
// framing around it, instead of being copied into a new 20 MB string for every request.
export type JsonParts = readonly (string | Buffer)[];

/** The bytes the parts make together (what Content-Length says). */
export function jsonPartsByteLength(parts: JsonParts): number {
  let length = 0;
  for (const part of parts) length += typeof part === 'string' ? Buffer.byteLength(part) : part.length;
  return length;
}

/** The parts as one text (for the small listings that are read back, not only sent). */
export function jsonPartsText(parts: JsonParts): string {
  return parts.map((part) => (typeof part === 'string' ? part : part.toString())).join('');
}

/** One JSON array made of the elements of several (each the text `[...]` of an array), without copying them. */
export function jsonArrayOfPages(pages: readonly Buffer[]): JsonParts {
  const parts: (string | Buffer)[] = ['['];
  for (const page of pages) {
    // The database writes arrays as `[...]` with nothing around the brackets.
    if (page.length <= 2) continue;
    if (parts.length > 1) parts.push(',');
    parts.push(page.subarray(1, page.length - 1));
  }
  parts.push(']');
  return parts;
}

/** The parts of a JSON array's text with `more` (already-serialised elements) appended, without copying `array`. */
export function appendToJsonArray(array: JsonParts, more: string): JsonParts {
  if (more === '') return array;
  if (jsonPartsByteLength(array) <= 2) return [`[${more}]`];
  const last = array.at(-1) ?? ']';
  const withoutBracket = typeof last === 'string' ? last.slice(0, -1) : last.subarray(0, last.length - 1);
  return [...array.slice(0, -1), withoutBracket, `,${more}]`];
}
