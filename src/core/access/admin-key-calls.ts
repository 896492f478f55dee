// Admin keys managed through the Admin API (`admin_keys`, `create_admin_key`,
// `revoke_admin_key`, and the console's admin keys page on top of them). The same rules as the
// `admin-key` command (checkAdminKeySpec, createAdminKey, revokeAdminKey), plus one rule for
// every caller: a caller never hands out more than it holds. It makes only keys of at most its
// scope, within its profiles and its allow-list, expiring no later than itself; and revokes only
// keys that hold no more than it does (so a limited caller cannot lock out the administrators
// above it). What each kind of caller holds is HeldRights (src/core/admin-call.ts): the secret
// and the command line hold every right; an admin key, and a console session signed in with one,
// what the key's row says; an OpenID session what its claims granted.
import { addDuration, parseIsoDuration } from '../../shared/iso-duration.js';
import { isIpPrefix, parseIpPrefix, prefixContains } from '../../net/ip-prefix.js';
import { scopeAllows, type AdminKeyInfo } from '../../protocol/admin-api.js';
import { formatAtom } from '../../shared/time.js';
import type { Transaction } from 'kysely';
import { findAdminKey, lockAdminKeyForShare } from '../../storage/admin-keys.js';
import type { Database } from '../../storage/schema.js';
import { callerKey, describeKey, EVERY_RIGHT, heldRights, type CallerKey, type HeldRights } from '../admin-call.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import {
  AdminKeyError,
  createAdminKey,
  listAdminKeys,
  revokeAdminKey,
  type AdminKeySpec,
  type MadeAdminKey,
  type StoredAdminKey,
} from './admin-keys.js';

/** An admin key's row as its caller holds it (the guard and console sessions make callers of it). */
export function callerKeyOf(key: StoredAdminKey): CallerKey {
  return {
    keyId: key.keyId,
    name: key.name,
    lineage: key.lineage,
    scope: key.scope,
    profiles: key.profiles,
    allowList: key.allowList,
    expiresAt: key.expiresAt,
  };
}

/**
 * Every admin key, as `admin_keys` lists it: never a secret nor its hash. When and from where a
 * key was last used only for keys within the caller's limits (those it could revoke): a key's
 * rights are no secret, an administrator's address and hours are.
 */
export async function adminKeyListing(ctx: PortalContext): Promise<AdminKeyInfo[]> {
  const now = formatAtom(ctx.clock.now());
  const limits = await callerLimits(ctx);
  return (await listAdminKeys(ctx)).map((key) => {
    const info = adminKeyInfo(key, now);
    const expiresAt = key.expiresAt === null ? null : new Date(key.expiresAt);
    if (beyondLimits(limits, key, 'revoke', expiresAt) === null) return info;
    return { ...info, last_used_at: null, last_used_address: null };
  });
}

/** One key's public face; `now` (ATOM) decides whether it has expired. */
export function adminKeyInfo(key: StoredAdminKey, now: string): AdminKeyInfo {
  return {
    key_id: key.keyId,
    name: key.name,
    scope: key.scope,
    profiles: key.profiles === null ? null : [...key.profiles],
    allow_list: key.allowList === null ? null : [...key.allowList],
    created_at: key.createdAt,
    expires_at: key.expiresAt,
    last_used_at: key.lastUsedAt,
    last_used_address: key.lastUsedAddress,
    revoked_at: key.revokedAt,
    state: stateOf(key, now),
  };
}

function stateOf(key: StoredAdminKey, now: string): AdminKeyInfo['state'] {
  if (key.revokedAt !== null) return 'revoked';
  const ended = key.expiresAt !== null && Date.parse(key.expiresAt) <= Date.parse(now);
  if (key.replacedBy !== null) return ended ? 'rotated-out' : 'rotated';
  return ended ? 'expired' : 'active';
}

/**
 * Makes a key for the calling key: bad values are a 400, a right the caller does not hold a 403,
 * a name in use a 409; each refused before anything is stored. The secret is in the answer only.
 */
export async function createAdminKeyForCaller(ctx: PortalContext, spec: AdminKeySpec): Promise<MadeAdminKey> {
  const knownProfiles = ctx.config.profiles.map((profile) => profile.profileId);
  try {
    // createAdminKey checks the values first; the rights are checked in the key's transaction,
    // with the caller's key locked (a revocation of it meanwhile leaves it nothing to make).
    return await createAdminKey(ctx, spec, knownProfiles, async (trx) =>
      assertWithinLimits(await callerLimits(ctx, trx), spec, 'make', newExpiry(ctx, spec.expiresIn)),
    );
  } catch (error) {
    throw asPortalError(error);
  }
}

/**
 * Revokes every key of the name (the current one and any in a rotation's grace period), when
 * each lies within the calling key's limits; a key may revoke itself.
 */
export async function revokeAdminKeyForCaller(ctx: PortalContext, name: string): Promise<number> {
  try {
    return await revokeAdminKey(ctx, name, async (trx, keys) => {
      const limits = await callerLimits(ctx, trx);
      for (const key of keys)
        assertWithinLimits(
          limits,
          { name, scope: key.scope, profiles: key.profiles, allowList: key.allowList },
          'revoke',
          key.expiresAt === null ? null : new Date(key.expiresAt),
        );
    });
  } catch (error) {
    throw asPortalError(error);
  }
}

/** What the calling key holds, each caller kind by its own rule (HeldRights), and how refusals name it. */
interface CallerLimits extends HeldRights {
  readonly who: string;
}

/** In a change's transaction (`trx`), the caller's key is read share-locked until it ends. */
async function callerLimits(ctx: PortalContext, trx?: Transaction<Database>): Promise<CallerLimits> {
  const call = ctx.call;
  // No call: a use case run on the portal host outside any call, with every right.
  if (call === undefined) return { who: 'the command line', ...EVERY_RIGHT };
  const who = describeKey(call);
  const key = callerKey(call.caller);
  if (key !== null) {
    // The key's row as it is now, not as the request began: a key revoked meanwhile holds nothing.
    const row = trx === undefined ? await findAdminKey(ctx.db, key.keyId) : await lockAdminKeyForShare(trx, key.keyId);
    if (row === undefined || row.revokedAt !== null) throw new PortalError('not-allowed', `${who} is gone`);
    return { who, ...callerKeyOf(row) };
  }
  const held = heldRights(call.caller);
  if (held === null) throw new PortalError('not-allowed', `${who} holds no right to admin keys`);
  return { who, ...held };
}

/** When a key made now with this lifetime would expire; null: never. */
function newExpiry(ctx: PortalContext, expiresIn: string | null): Date | null {
  if (expiresIn === null) return null;
  const duration = parseIsoDuration(expiresIn);
  if (duration === null) return null;
  return addDuration(ctx.clock.now(), duration);
}

/**
 * Refuses (403) a key that would hold more than its caller: scope, profiles, allow-list and
 * expiry, compared as rights and instants. One rule for making a key and for revoking one.
 */
function assertWithinLimits(
  limits: CallerLimits,
  rights: Pick<AdminKeySpec, 'name' | 'scope' | 'profiles' | 'allowList'>,
  action: 'make' | 'revoke',
  expiresAt: Date | null,
): void {
  const why = beyondLimits(limits, rights, action, expiresAt);
  if (why !== null)
    throw new PortalError('not-allowed', `${limits.who} may not ${action} key "${rights.name}": ${why}`);
}

/** Why a key with `rights` would hold more than its caller, or null when it would not. */
function beyondLimits(
  limits: CallerLimits,
  rights: Pick<AdminKeySpec, 'scope' | 'profiles' | 'allowList'>,
  action: 'make' | 'revoke',
  expiresAt: Date | null,
): string | null {
  if (!scopeAllows(limits.scope, rights.scope))
    return `scope "${rights.scope}" is more than its own scope "${limits.scope}"`;
  if (limits.profiles !== null) {
    const own = limits.profiles.join(', ');
    if (rights.profiles === null) return `every profile is more than its own profiles (${own})`;
    const outside = rights.profiles.filter((profileId) => !limits.profiles?.includes(profileId));
    if (outside.length > 0) return `profiles ${outside.join(', ')} are outside its own (${own})`;
  }
  if (limits.allowList !== null) {
    const own = limits.allowList.join(', ');
    if (rights.allowList === null)
      return `use from anywhere in adminApi.allowList is wider than its own allow-list (${own})`;
    const ownPrefixes = limits.allowList.filter(isIpPrefix).map(parseIpPrefix);
    const wider = rights.allowList.filter(
      (entry) => !ownPrefixes.some((prefix) => prefixContains(prefix, parseIpPrefix(entry))),
    );
    if (wider.length > 0) return `allow-list ${wider.join(', ')} is wider than its own (${own})`;
  }
  if (limits.expiresAt !== null && (expiresAt === null || expiresAt.getTime() > Date.parse(limits.expiresAt))) {
    const own = `the calling key, which expires at ${limits.expiresAt}`;
    return action === 'make'
      ? `it would outlive ${own} (give a shorter expires_in)`
      : `${expiresAt === null ? 'it never expires' : `it expires at ${formatAtom(expiresAt)}`}, after ${own}`;
  }
  return null;
}

/** The command's error as the Admin API answers it: the parameter's name instead of the flag. */
function asPortalError(error: unknown): unknown {
  if (!(error instanceof AdminKeyError)) return error;
  const problem = error.problem;
  if (problem === undefined) return new PortalError('invalid-parameter', error.message);
  switch (problem.kind) {
    case 'invalid':
      return new PortalError(
        'invalid-parameter',
        `invalid value for "${problem.parameter}": ${error.message.replace(/^--[a-z-]+: /, '')}`,
      );
    case 'name-taken':
      return new PortalError(
        'conflict',
        error.message.replace(/: rotate it .*$/, ': revoke it first, or choose another name'),
      );
    case 'no-such-key':
      return new PortalError('no-such-admin-key', error.message);
  }
}
