// Admin keys managed through the Admin API (issue 25: `admin_keys`, `create_admin_key`,
// `revoke_admin_key`, and the console's admin keys page on top of them). The same rules as the
// `admin-key` command (checkAdminKeySpec, createAdminKey, revokeAdminKey), plus one the command
// does not need: a key never hands out more than it holds. A key makes only keys of at most its
// scope, within its profiles and its allow-list, expiring no later than itself; and revokes only
// keys within those same limits (so a limited key cannot lock out the administrators above it).
// The specification's secret, like the command line, has no limits.
import { addDuration, parseIsoDuration } from '../../shared/iso-duration.js';
import { isIpPrefix, parseIpPrefix, prefixContains } from '../../net/ip-prefix.js';
import { scopeAllows, type AdminKeyInfo, type AdminScope } from '../../protocol/admin-api.js';
import type { ProfileId } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import { findAdminKey } from '../../storage/admin-keys.js';
import { describeKey } from '../admin-call.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import {
  AdminKeyError,
  checkAdminKeySpec,
  createAdminKey,
  listAdminKeys,
  revokeAdminKey,
  type AdminKeySpec,
  type MadeAdminKey,
  type StoredAdminKey,
} from './admin-keys.js';

/** What the calling key may hand out; null: no limit (the specification's secret, the command line). */
interface CallerLimits {
  readonly who: string;
  readonly scope: AdminScope;
  readonly profiles: readonly ProfileId[] | null;
  readonly allowList: readonly string[] | null;
  readonly expiresAt: string | null;
}

/** Every admin key, as `admin_keys` lists it: never a secret nor its hash. */
export async function adminKeyListing(ctx: PortalContext): Promise<AdminKeyInfo[]> {
  const now = formatAtom(ctx.clock.now());
  return (await listAdminKeys(ctx)).map((key) => adminKeyInfo(key, now));
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
  const ended = key.expiresAt !== null && key.expiresAt <= now;
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
    checkAdminKeySpec(spec, knownProfiles);
    const limits = await callerLimits(ctx);
    if (limits !== null) assertWithinLimits(limits, spec, 'make', newExpiry(ctx, spec.expiresIn));
    return await createAdminKey(ctx, spec, knownProfiles);
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
    const limits = await callerLimits(ctx);
    if (limits !== null) {
      const live = (await listAdminKeys(ctx)).filter((key) => key.name === name && key.revokedAt === null);
      for (const key of live)
        assertWithinLimits(
          limits,
          { name, scope: key.scope, profiles: key.profiles, allowList: key.allowList },
          'revoke',
          null,
        );
    }
    return await revokeAdminKey(ctx, name);
  } catch (error) {
    throw asPortalError(error);
  }
}

async function callerLimits(ctx: PortalContext): Promise<CallerLimits | null> {
  const call = ctx.call;
  // No call (the command line) or the specification's secret: every right.
  if (call === undefined || call.caller.keyId === null) return null;
  const key = await findAdminKey(ctx.db, call.caller.keyId);
  if (key === undefined) throw new PortalError('not-allowed', `${describeKey(call)} is gone`);
  return {
    who: describeKey(call),
    scope: key.scope,
    profiles: key.profiles,
    allowList: key.allowList,
    expiresAt: key.expiresAt,
  };
}

/** When a key made now with this lifetime would expire (ATOM); null: never. */
function newExpiry(ctx: PortalContext, expiresIn: string | null): string | null {
  const duration = expiresIn === null ? null : parseIsoDuration(expiresIn);
  return duration === null ? null : formatAtom(addDuration(ctx.clock.now(), duration));
}

/** Refuses (403) rights beyond the caller's: scope, profiles, allow-list and (when making a key) lifetime. */
function assertWithinLimits(
  limits: CallerLimits,
  rights: Pick<AdminKeySpec, 'name' | 'scope' | 'profiles' | 'allowList'>,
  action: 'make' | 'revoke',
  expiresAt: string | null,
): void {
  const refuse = (why: string) =>
    new PortalError('not-allowed', `${limits.who} may not ${action} key "${rights.name}": ${why}`);
  if (!scopeAllows(limits.scope, rights.scope))
    throw refuse(`scope "${rights.scope}" is more than its own scope "${limits.scope}"`);
  if (limits.profiles !== null) {
    const own = limits.profiles.join(', ');
    if (rights.profiles === null) throw refuse(`every profile is more than its own profiles (${own})`);
    const outside = rights.profiles.filter((profileId) => !limits.profiles?.includes(profileId));
    if (outside.length > 0) throw refuse(`profiles ${outside.join(', ')} are outside its own (${own})`);
  }
  if (limits.allowList !== null) {
    const own = limits.allowList.join(', ');
    if (rights.allowList === null)
      throw refuse(`use from anywhere in adminApi.allowList is wider than its own allow-list (${own})`);
    const ownPrefixes = limits.allowList.filter(isIpPrefix).map(parseIpPrefix);
    const wider = rights.allowList.filter(
      (entry) => !ownPrefixes.some((prefix) => prefixContains(prefix, parseIpPrefix(entry))),
    );
    if (wider.length > 0) throw refuse(`allow-list ${wider.join(', ')} is wider than its own (${own})`);
  }
  if (action === 'make' && limits.expiresAt !== null && (expiresAt === null || expiresAt > limits.expiresAt)) {
    throw refuse(`it would outlive the calling key, which expires at ${limits.expiresAt} (give a shorter expires_in)`);
  }
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
