// Admin keys, the audit log and a clock the test moves, for the tests of admin keys and
// their audit log: keys are
// made with the same use case the `admin-key` command runs, on the portal's own database.
import { createAdminKey, type AdminKeySpec } from '../../src/core/access/admin-keys.js';
import type { KeyScope } from '../../src/protocol/admin-api.js';
import { asProfileId } from '../../src/shared/ids.js';
import type { Clock } from '../../src/shared/time.js';
import { auditRecords, type AuditRecord } from '../../src/storage/audit-log.js';
import type { PortalConfigFile } from '../../src/config/schema.js';
import { UNREACHABLE_NODE, type TestPortal } from './test-portal.js';

/** The WireGuard profile `employees`, on a node nobody answers at: most Admin API tests start from it. */
export const employeesProfile: PortalConfigFile['ProfileList'][number] = {
  profileId: 'employees',
  displayName: 'Employees',
  hostName: 'vpn.example.org',
  wRangeFour: '10.44.0.0/24',
  wRangeSix: 'fd44::/64',
  nodeUrl: UNREACHABLE_NODE,
};

/** The WireGuard profile `guests`, beside `employees` on the same node. */
export const guestsProfile: PortalConfigFile['ProfileList'][number] = {
  profileId: 'guests',
  displayName: 'Guests',
  hostName: 'vpn.example.org',
  wRangeFour: '10.45.0.0/24',
  wRangeSix: 'fd45::/64',
  nodeUrl: UNREACHABLE_NODE,
};

/** Two WireGuard profiles: `employees` and `guests`. */
export const twoProfiles: Partial<PortalConfigFile> = { ProfileList: [employeesProfile, guestsProfile] };

export interface KeyOptions {
  readonly scope?: KeyScope;
  readonly profiles?: readonly string[] | null;
  readonly expiresIn?: string | null;
  readonly allowList?: readonly string[] | null;
}

/** Makes an admin key on the portal's database and returns the key itself. */
export async function makeAdminKey(portal: TestPortal, name: string, options: KeyOptions = {}): Promise<string> {
  const spec: AdminKeySpec = {
    name,
    scope: options.scope ?? 'admin',
    profiles: options.profiles === undefined || options.profiles === null ? null : options.profiles.map(asProfileId),
    expiresIn: options.expiresIn ?? null,
    allowList: options.allowList ?? null,
  };
  const ctx = portal.portal.ctx;
  const made = await createAdminKey(
    ctx,
    spec,
    ctx.config.profiles.map((profile) => profile.profileId),
  );
  return made.token;
}

export const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

/**
 * A key or token mistyped in its last character, so its checksum no longer matches: always
 * another character than the one there (a fixed replacement is the same one time in 64).
 */
export const mistyped = (token: string): string => `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;

/** A clock the test moves forward. */
export class ManualClock implements Clock {
  #now: number;

  constructor(start = '2026-03-02T09:00:00Z') {
    this.#now = Date.parse(start);
  }

  now(): Date {
    return new Date(this.#now);
  }

  advance(milliseconds: number): void {
    this.#now += milliseconds;
  }
}

/** The audit log, newest first, read from the database. */
export function auditLog(portal: TestPortal, limit = 1000): Promise<AuditRecord[]> {
  return auditRecords(portal.portal.ctx.db, { limit });
}

/** What the Admin API can change, to show that a refused call changed nothing. */
export async function portalState(portal: TestPortal): Promise<unknown> {
  const db = portal.portal.ctx.db;
  return {
    users: await db.selectFrom('users').select(['user_id', 'is_disabled']).orderBy('user_id').execute(),
    peers: await db
      .selectFrom('wg_peers')
      .select(['public_key', 'user_id', 'profile_id'])
      .orderBy('public_key')
      .execute(),
    certificates: await db
      .selectFrom('certificates')
      .select(['common_name', 'user_id'])
      .orderBy('common_name')
      .execute(),
    authorizations: await db
      .selectFrom('oauth_authorizations')
      .select(['auth_key', 'user_id'])
      .orderBy('auth_key')
      .execute(),
    webhooks: await db
      .selectFrom('webhooks')
      .select(['webhook_id', 'secret', 'previous_secret'])
      .orderBy('webhook_id')
      .execute(),
    webhookDeliveries: await db
      .selectFrom('webhook_deliveries')
      .select(['delivery_id', 'state'])
      .orderBy('delivery_id')
      .execute(),
    enrollmentTokens: await db
      .selectFrom('enrollment_tokens')
      .select(['token_id', 'user_id', 'uses_left', 'revoked_at'])
      .orderBy('token_id')
      .execute(),
    devices: await db.selectFrom('devices').select(['device_id', 'user_id', 'state']).orderBy('device_id').execute(),
    adminKeys: await db.selectFrom('admin_keys').select(['key_id', 'name', 'revoked_at']).orderBy('key_id').execute(),
    legalHolds: await db
      .selectFrom('legal_holds')
      .select(['hold_id', 'user_id', 'released_at'])
      .orderBy('hold_id')
      .execute(),
  };
}

/**
 * An OAuth authorization (nothing in the portal makes them; the Admin API deletes them). It
 * expires far ahead: the daily housekeeping deletes expired ones, and with a date now past it
 * raced the tests that compare the state before and after a refused call.
 */
export async function authorize(portal: TestPortal, userId: string, authKey: string): Promise<void> {
  await portal.portal.ctx.db
    .insertInto('oauth_authorizations')
    .values({
      auth_key: authKey,
      user_id: userId,
      client_id: 'org.eduvpn.app.linux',
      scope: 'config',
      authorized_at: '2026-01-01T00:00:00+00:00',
      expires_at: '2099-01-01T00:00:00+00:00',
    })
    .execute();
}
