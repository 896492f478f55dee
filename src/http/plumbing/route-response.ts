// What an Admin API handler answers: JSON, JSON already serialised, a file with its headers, or
// nothing (204). Also what is kept for a retry with an Idempotency-Key (src/http/admin-api/idempotency.ts).
import type { JsonParts } from '../../shared/json-parts.js';

export type RouteResponse =
  /** JSON; headers: e.g. a revocation's receipt id (retire_device). */
  | { readonly status: 200; readonly json: unknown; readonly headers?: Readonly<Record<string, string>> }
  /** JSON already serialised. */
  | { readonly status: 200; readonly jsonText: string }
  /** Large listings: JSON in parts sent one after another (src/shared/json-parts.ts); never kept for a retry. */
  | { readonly status: 200; readonly jsonParts: JsonParts; readonly headers?: Readonly<Record<string, string>> }
  /** A file: text, or bytes (a signed Apple profile). */
  | { readonly status: 200; readonly body: string | Uint8Array; readonly headers: Readonly<Record<string, string>> }
  /** Nothing, or only headers (a revocation's receipt id). */
  | { readonly status: 204; readonly headers?: Readonly<Record<string, string>> };
