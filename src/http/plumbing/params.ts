// Reads request parameters by the reference's rules and answers its error texts (§3), so
// scripts written against it keep working: `missing post parameter "user_id"`, `invalid value
// for "display_name"`, ... For durations and times, whose form is easy to get wrong, the
// reference's text is followed by the expected form (and the values the configuration allows there):
// `invalid value for "expires_in": "30d" is not an ISO 8601 duration such as P30D; allowed here: P90D, P1Y`.
// The parameters themselves are defined once, in src/protocol/admin-api-params.ts.
import type { z } from 'zod';
import type { PortalConfig } from '../../config/portal-config.js';
import { paramFields, SHOWN_TO_CLIENT, type ParamField, type ParamsSchema } from '../../protocol/admin-api-params.js';
import { UndecodableValue } from './form-text.js';
import { HttpError } from './http-error.js';

export type ParamSource = 'query' | 'post';

/**
 * Reads and validates parameters from a query string or form body (already decoded into an
 * object). Fields are checked in the order the schema lists them; the first failure answers 400.
 * `config` gives the values a parameter allows here (ParamNote.allowedHere) for that answer.
 */
export function readParams<S extends ParamsSchema>(
  source: ParamSource,
  input: unknown,
  schema: S,
  config?: PortalConfig,
): z.output<S> {
  const values = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  const sourceName = source === 'post' ? 'post parameter' : 'query parameter';
  const result: Record<string, unknown> = {};
  for (const spec of paramFields(schema)) {
    const { name } = spec;
    const raw = Object.hasOwn(values, name) ? values[name] : undefined;
    // PHP clients send arrays as `user_id[]=a` (or `user_id[0]=a`); that is an array, not a missing value.
    if (raw === undefined && Object.keys(values).some((key) => key.startsWith(`${name}[`))) {
      throw new HttpError(400, `value of ${sourceName} "${name}" MUST be string`);
    }
    if (raw === undefined) {
      if (spec.required) throw new HttpError(400, `missing ${sourceName} "${name}"`);
      result[name] = undefined;
      continue;
    }
    // Percent-encoded bytes that are no UTF-8 (form-text.ts): the reference's answer to text that is not UTF-8.
    if (raw instanceof UndecodableValue) throw new HttpError(400, `invalid value for "${name}"`);
    if (typeof raw !== 'string') throw new HttpError(400, `value of ${sourceName} "${name}" MUST be string`);
    const parsed = spec.schema.safeParse(raw);
    if (!parsed.success) throw new HttpError(400, invalidValue(name, raw, spec, config, parsed.error));
    result[name] = parsed.data;
  }
  return result as z.output<S>;
}

/** The reference's `invalid value for "NAME"`, then, for durations and times, the value and the form expected. */
function invalidValue(
  name: string,
  raw: string,
  spec: ParamField,
  config: PortalConfig | undefined,
  error: z.ZodError,
): string {
  // A reason the schema marked as shown (e.g. a key's non-canonical encoding) is said as it is.
  const reason =
    error.issues.find((issue) => issue.code === 'custom' && issue.params?.[SHOWN_TO_CLIENT] === true)?.message ??
    spec.note?.reason;
  if (reason !== undefined) return `invalid value for "${name}": ${reason}`;
  const expected = spec.note?.expectedForm;
  if (expected === undefined) return `invalid value for "${name}"`;
  const shown = [...raw].length > 64 ? `${[...raw].slice(0, 64).join('')}…` : raw;
  const allowed = spec.note?.allowedHere === undefined || config === undefined ? [] : spec.note.allowedHere(config);
  return `invalid value for "${name}": ${JSON.stringify(shown)} is not ${expected}${allowed.length === 0 ? '' : `; allowed here: ${allowed.join(', ')}`}`;
}

/**
 * Reads a form body against a wire schema of src/protocol (the Node API), answering 400 with
 * the same messages as readParams: the first field in the schema's order that is wrong.
 */
export function readForm<S extends z.ZodObject>(schema: S, input: unknown): z.output<S> {
  const values = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  const parsed = schema.safeParse(values);
  if (parsed.success) return parsed.data;
  const name = String(parsed.error.issues[0]?.path[0] ?? '');
  const raw = values[name];
  if (raw === undefined) throw new HttpError(400, `missing post parameter "${name}"`);
  if (typeof raw !== 'string' && !Array.isArray(raw))
    throw new HttpError(400, `value of post parameter "${name}" MUST be string`);
  throw new HttpError(400, `invalid value for "${name}"`);
}
