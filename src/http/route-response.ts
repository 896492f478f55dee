// What an Admin API handler answers: JSON, JSON already serialised, a file with its headers, or
// nothing (204). Also what is kept for a retry with an Idempotency-Key (src/http/idempotency.ts).
export type RouteResponse =
  | { readonly status: 200; readonly json: unknown }
  /** JSON already serialised (large listings are built as text). */
  | { readonly status: 200; readonly jsonText: string }
  | { readonly status: 200; readonly body: string; readonly headers: Readonly<Record<string, string>> }
  | { readonly status: 204 };
