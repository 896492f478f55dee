// JSON written as a list of parts that are sent one after another, never joined: a listing of
// 100,000 configurations kept in memory as one Buffer goes out as it is, with a few bytes of
// framing around it, instead of being copied into a new 20 MB string for every request.
export type JsonParts = readonly (string | Buffer)[];

/** The bytes the parts make together (what Content-Length says). */
export function jsonPartsByteLength(parts: JsonParts): number {
  let length = 0;
  for (const part of parts) length += typeof part === 'string' ? Buffer.byteLength(part) : part.length;
  return length;
}

/** The parts of a JSON array's text with `more` (already-serialised elements) appended, without copying `array`. */
export function appendToJsonArray(array: Buffer, more: string): JsonParts {
  if (more === '') return [array];
  // The database writes arrays as `[...]` with nothing after the bracket.
  if (array.length <= 2) return [`[${more}]`];
  return [array.subarray(0, array.length - 1), `,${more}]`];
}
