// A SCIM client for the tests of the portal's SCIM service provider: requests as a directory's
// provisioning client sends them (Bearer key, application/scim+json), answers read as JSON.
import { randomUUID } from 'node:crypto';
import { REVOCATION_HEADER } from '../../src/protocol/admin-api.js';
import { insertScimGroup } from '../../src/storage/scim-groups.js';
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

const SEEDED_AT = '2026-03-02T09:00:00+00:00';

/** Provisioned SCIM users (`member-0`, `member-1`, …) written straight to the database (50,000 requests would take minutes); their SCIM ids. */
export async function seedScimUsers(portal: TestPortal, count: number): Promise<string[]> {
  const db = portal.portal.ctx.db;
  const ids = Array.from({ length: count }, () => randomUUID());
  for (let start = 0; start < count; start += 500) {
    const chunk = ids.slice(start, start + 500).map((scimId, index) => ({ scimId, userId: `member-${start + index}` }));
    await db
      .insertInto('users')
      .values(
        chunk.map(({ userId }) => ({ user_id: userId, created_at: SEEDED_AT, last_seen: SEEDED_AT, auth_data: null })),
      )
      .execute();
    await db
      .insertInto('scim_users')
      .values(
        chunk.map(({ scimId, userId }) => ({
          scim_id: scimId,
          user_id: userId,
          external_id: null,
          attributes: '{}',
          created_at: SEEDED_AT,
          updated_at: SEEDED_AT,
        })),
      )
      .execute();
  }
  return ids;
}

/** A group of these members written straight to the database; its SCIM id. */
export async function seedScimGroup(
  portal: TestPortal,
  displayName: string,
  memberIds: readonly string[],
): Promise<string> {
  const db = portal.portal.ctx.db;
  const scimId = randomUUID();
  await insertScimGroup(db, { scimId, displayName, externalId: null, createdAt: SEEDED_AT, updatedAt: SEEDED_AT });
  for (let start = 0; start < memberIds.length; start += 500)
    await db
      .insertInto('scim_group_members')
      .values(memberIds.slice(start, start + 500).map((memberId) => ({ group_id: scimId, member_id: memberId })))
      .execute();
  return scimId;
}

/** The member ids of a group as stored, sorted: what a change really wrote, whatever it answered. */
export async function storedMembers(portal: TestPortal, groupId: string): Promise<string[]> {
  const rows = await portal.portal.ctx.db
    .selectFrom('scim_group_members')
    .select('member_id')
    .where('group_id', '=', groupId)
    .execute();
  return rows.map((row) => row.member_id).sort();
}
