// Holds every answer a test portal gives to its call's definition in ADMIN_API_CALLS: a JSON
// answer must parse with the call's schema made strict (a field the schema does not name is
// refused, at any depth), a no-body call answers nothing, an error is {"error": "…"} alone. The
// test portal's request helpers and its typed client check each answer as it arrives, so every
// test that calls the Admin API through them checks the real answers of the real routes.
import { z } from 'zod';
import {
  ADMIN_API_CALLS,
  NO_BODY,
  errorAnswer,
  type AdminApiCall,
  type CallAnswer,
} from '../../src/protocol/admin-api.js';

/** The schema with every object in it refusing keys it does not name. */
export function strictSchema(schema: z.ZodType): z.ZodType {
  if (schema instanceof z.ZodObject) {
    const shape: Record<string, z.ZodType> = {};
    for (const [name, field] of Object.entries(schema.shape as Record<string, z.ZodType>)) {
      shape[name] = strictSchema(field);
    }
    return z.strictObject(shape);
  }
  if (schema instanceof z.ZodArray) return z.array(strictSchema(schema.element as z.ZodType));
  if (schema instanceof z.ZodRecord) {
    return z.record(schema.keyType as z.ZodString, strictSchema(schema.valueType as z.ZodType));
  }
  if (schema instanceof z.ZodNullable) return strictSchema(schema.unwrap() as z.ZodType).nullable();
  if (schema instanceof z.ZodOptional) return strictSchema(schema.unwrap() as z.ZodType).optional();
  if (schema instanceof z.ZodUnion) {
    const options = (schema.options as readonly z.ZodType[]).map(strictSchema);
    const [first, second, ...rest] = options;
    if (first === undefined || second === undefined) return schema;
    return z.union([first, second, ...rest]);
  }
  return schema;
}

const callsByPath = new Map<string, AdminApiCall>(Object.values(ADMIN_API_CALLS).map((call) => [call.path, call]));
const strictAnswers = new Map<CallAnswer, z.ZodType>();
const strictError = strictSchema(errorAnswer);

function strictAnswerOf(answer: z.ZodType): z.ZodType {
  let strict = strictAnswers.get(answer);
  if (strict === undefined) {
    strict = strictSchema(answer);
    strictAnswers.set(answer, strict);
  }
  return strict;
}

/** An answer the call's definition does not describe. */
export class UndescribedAnswer extends Error {
  override readonly name = 'UndescribedAnswer';
}

/**
 * Throws UndescribedAnswer when the answer to `url` (below `adminBase`) is not what its call's
 * definition says. Paths that name no call (openapi.json, an unknown path) are not checked.
 */
export function checkAnswer(adminBase: string, url: string, status: number, body: string): void {
  if (!url.startsWith(`${adminBase}/`)) return;
  const path = decodeURIComponent(url.slice(adminBase.length).split('?')[0] ?? '');
  const call = callsByPath.get(path);
  if (call === undefined) return;
  const problem = answerProblem(call, status, body);
  if (problem !== null) throw new UndescribedAnswer(`${path} answered ${status} ${problem}: ${body.slice(0, 300)}`);
}

function answerProblem(call: AdminApiCall, status: number, body: string): string | null {
  if (status >= 400) return jsonProblem(strictError, body);
  if (call.answer === NO_BODY) return status === 204 && body === '' ? null : 'where its definition says no body';
  if (typeof call.answer === 'string') return null;
  if (status !== 200) return 'where its definition says 200 with JSON';
  return jsonProblem(strictAnswerOf(call.answer), body);
}

function jsonProblem(schema: z.ZodType, body: string): string | null {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return 'a body that is not JSON';
  }
  const parsed = schema.safeParse(value);
  if (parsed.success) return null;
  const issue = parsed.error.issues[0];
  const where = issue === undefined || issue.path.length === 0 ? 'the top' : issue.path.join('.');
  return `a body its schema does not describe (${issue?.message ?? 'invalid'} at ${where})`;
}

/** fetch, with every answer of the Admin API under `adminBase` checked by checkAnswer. */
export function checkingFetch(adminBase: string): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const url = input instanceof Request ? input.url : String(input);
    checkAnswer(adminBase, url, response.status, await response.clone().text());
    return response;
  };
}
