// What an Admin API handler answers, typed by its call's answer in ADMIN_API_CALLS: the JSON its
// schema describes (as a value, or already serialised in parts for the large listings), nothing
// (204), or a configuration file. Also what is kept for a retry with an Idempotency-Key
// (src/http/admin-api/idempotency.ts), which gives a JSON answer back as text.
import type { AnswerBody, CallAnswer, CONFIGURATION_FILE, NO_BODY } from '../../protocol/admin-api.js';
import type { JsonParts } from '../../shared/json-parts.js';

type Headers = Readonly<Record<string, string>>;

/** A JSON answer. Headers: e.g. a revocation's receipt id (retire_device), stale nodes (the live listings). */
export type JsonAnswer<T> = JsonValueAnswer<T> | JsonPartsAnswer;

/** The value; the API serialises it, the console reads it as it is. */
export interface JsonValueAnswer<T> {
  readonly status: 200;
  readonly json: T;
  readonly headers?: Headers;
}

/**
 * Large listings: the value's JSON text in parts sent one after another (src/shared/json-parts.ts),
 * never kept for a retry. The parts are the text of the call's answer (the strict answer check
 * of the tests holds the routes to it); the console reads them back through the call's schema.
 */
export interface JsonPartsAnswer {
  readonly status: 200;
  readonly jsonParts: JsonParts;
  readonly headers?: Headers;
}

/** A file: text, or bytes (a signed Apple profile). */
export interface FileAnswer {
  readonly status: 200;
  readonly body: string | Uint8Array;
  readonly headers: Headers;
}

/** Nothing, or only headers (a revocation's receipt id). */
export interface NoBodyAnswer {
  readonly status: 204;
  readonly headers?: Headers;
}

/** What the handler of a call with answer `A` returns. */
export type RouteAnswer<A extends CallAnswer = CallAnswer> = A extends typeof NO_BODY
  ? NoBodyAnswer
  : A extends typeof CONFIGURATION_FILE
    ? FileAnswer
    : JsonAnswer<AnswerBody<A>>;

/** What the API sends: a handler's answer, or a kept answer given again (its JSON as text). */
export type RouteResponse = RouteAnswer | { readonly status: 200; readonly jsonText: string };
