// A SCIM client for the tests of the portal's SCIM service provider: requests as a directory's
// provisioning client sends them (Bearer key, application/scim+json), answers read as JSON.
import { REVOCATION_HEADER } from '../../src/protocol/admin-api.js';
import type { TestPortal } from './test-portal.js';

export interface ScimAnswer {
  readonly status: number;
  readonly contentType: string | null;
  readonly headers: Headers;
  /** The JSON body; null for none (204). */
  readonly body: Record<string, unknown> | null;
  /** The revocation receipts the answer names (VPN-Portal-Revocation). */
  readonly receipts: string[];
}

export interface ScimClient {
  readonly base: string;
  send(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ScimAnswer>;
}

/** `{baseUrl}scim/v2/` of a test portal, asked with `key` (none: no Authorization header). */
export function scimClient(portal: TestPortal, key: string | null): ScimClient {
  const base = `${portal.portal.url}${portal.portal.ctx.config.basePath}/scim/v2/`;
  return {
    base,
    async send(method, path, body, headers = {}) {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: {
          ...(key === null ? {} : { authorization: `Bearer ${key}` }),
          ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
      const text = await response.text();
      const receipts = response.headers.get(REVOCATION_HEADER);
      return {
        status: response.status,
        contentType: response.headers.get('content-type'),
        headers: response.headers,
        body: text === '' ? null : (JSON.parse(text) as Record<string, unknown>),
        receipts: receipts === null ? [] : receipts.split(', '),
      };
    },
  };
}

/** A PatchOp request of these operations. */
export function patchOp(...operations: unknown[]): Record<string, unknown> {
  return { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: operations };
}

/** The `Resources` of a list answer; fails the test when the answer has none. */
export function resourcesOf<T>(answer: ScimAnswer): T[] {
  const resources = answer.body?.['Resources'];
  if (!Array.isArray(resources)) throw new Error(`not a list answer: ${JSON.stringify(answer.body)}`);
  return resources as T[];
}
