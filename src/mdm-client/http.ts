// The one way the MDM clients speak HTTP: a time limit on every request, a size limit on every
// answer, JSON parsed with zod at the edge, and errors that name the URL and status but never a
// secret (tokens and client secrets travel only in headers and bodies, which are never quoted).
import { z } from 'zod';
import { fetchFailureReason } from '../shared/error-message.js';
import { AnswerTooLargeError, readResponseWithin } from '../shared/limited-body.js';

const TOKEN_ANSWER = z.object({ access_token: z.string().min(1) });

/** An MDM request without an answer within this time failed. */
const REQUEST_TIMEOUT_MS = 30_000;
/** One page of an inventory is far smaller than this. */
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

/** An inventory that could not be read: which request, and why (no secret in it). */
export class MdmInventoryError extends Error {
  override readonly name = 'MdmInventoryError';
}

/** Sends one request and parses its JSON answer with `schema`; throws MdmInventoryError. */
export async function requestJson<T>(url: string, init: RequestInit, schema: z.ZodType<T>): Promise<T> {
  const where = describeUrl(url);
  let response: Response;
  try {
    response = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (error) {
    throw new MdmInventoryError(`${init.method ?? 'GET'} ${where}: ${fetchFailureReason(error)}`);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new MdmInventoryError(`${init.method ?? 'GET'} ${where} answered ${response.status}`);
  }
  let body: Buffer;
  try {
    // Read against the cap: a larger answer is cut off there, never held whole.
    body = await readResponseWithin(response, MAX_ANSWER_BYTES, where);
  } catch (error) {
    if (error instanceof AnswerTooLargeError) throw new MdmInventoryError(error.message);
    throw new MdmInventoryError(
      `${where}: the answer broke off (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    throw new MdmInventoryError(`${where} did not answer JSON`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw new MdmInventoryError(
      `${where} answered an unexpected shape (${parsed.error.issues[0]?.message ?? 'invalid'} at ${parsed.error.issues[0]?.path.join('.') ?? ''})`,
    );
  return parsed.data;
}

/** A URL for messages: without its query (which may carry paging tokens) and credentials. */
export function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

/** OAuth 2.0 client credentials (RFC 6749 §4.4) as Microsoft's and Jamf's token endpoints take them: the access token. */
export async function clientCredentialsToken(tokenUrl: string, form: Record<string, string>): Promise<string> {
  const answer = await requestJson(
    tokenUrl,
    {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ grant_type: 'client_credentials', ...form }).toString(),
    },
    TOKEN_ANSWER,
  );
  return answer.access_token;
}
