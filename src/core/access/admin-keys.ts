// Admin keys: named, scoped, expiring credentials of the Admin API, each with its own address
// allow-list, on top of the specification's secret (which stays the bootstrap key with every
// right). Made, listed, rotated and revoked by `vpn-portal admin-key …` on the database, so
// every portal instance on it knows them at once; checked by the portal on every request.
// A key is shown once; the database holds its HMAC under a pepper from DATA/keys only. Making,
// rotating and revoking are changes announced on the events seam, so the command that made them
// is in the audit log (the CLI binds the seam to it, src/cli/admin-key.ts).
import type { Kysely, Transaction } from 'kysely';
import type { KeyStore } from '../../keys/key-store.js';
import { hashAdminKey, newAdminKeyToken, parseAdminKeyToken } from '../../keys/admin-key-token.js';
import { isIpPrefix } from '../../net/ip-prefix.js';
import type { KeyScope } from '../../protocol/admin-api.js';
import { constantTimeEquals } from '../../shared/constant-time.js';
import type { ProfileId } from '../../shared/ids.js';
import {
  addDuration,
  isWithinMaxDuration,
  MAX_DURATION,
  parseIsoDuration,
  type IsoDuration,
} from '../../shared/iso-duration.js';
import { formatAtom, type Clock } from '../../shared/time.js';
import {
  currentAdminKey,
  findAdminKey,
  insertAdminKey,
  listAdminKeys as listStoredKeys,
  markAdminKeyReplaced,
  noteAdminKeyUse,
  lockLiveAdminKeysNamed,
  revokeAdminKeys,
  type StoredAdminKey,
} from '../../storage/admin-keys.js';
import { isUniqueViolation } from '../../storage/errors.js';
import type { HandOutEnd } from '../../storage/idempotency.js';
import type { Database } from '../../storage/schema.js';
import { SECRET_KEY_NAME } from '../admin-call.js';
import type { PortalEvents } from '../events.js';
import { elapsedSince, monotonicNow, type MonotonicMs } from '../../shared/monotonic.js';

export type { StoredAdminKey } from '../../storage/admin-keys.js';

/** What managing and checking keys needs: a subset of PortalContext, so the CLI can run it without a portal. */
export interface AdminKeyContext {
  readonly db: Kysely<Database>;
  readonly keys: KeyStore;
  readonly clock: Clock;
  /** Where making, rotating and revoking a key are announced (bound to the command by the CLI). */
  readonly events: PortalEvents;
}

/** A key's "last used" is written at most this often (per key), so GETs do not all become writes. */
export const LAST_USED_INTERVAL_MS = 60_000;

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Which part of a request an AdminKeyError is about, so the Admin API can answer with the right status. */
export type AdminKeyProblem =
  /** A value of this spec field (the Admin API's parameter of the same name) is wrong. */
  | { readonly kind: 'invalid'; readonly parameter: 'name' | 'profiles' | 'expires_in' | 'allow_list' }
  | { readonly kind: 'name-taken' }
  | { readonly kind: 'no-such-key' };

/** A request the administrator must fix (the CLI prints it and exits 2). */
export class AdminKeyError extends Error {
  override readonly name = 'AdminKeyError';

  constructor(
    message: string,
    readonly problem?: AdminKeyProblem,
  ) {
    super(message);
  }
}

export interface AdminKeySpec {
  readonly name: string;
  readonly scope: KeyScope;
  /** null: every profile. */
  readonly profiles: readonly ProfileId[] | null;
  /** ISO 8601 duration; null: never expires. */
  readonly expiresIn: string | null;
  /** CIDR prefixes; null: only adminApi.allowList. */
  readonly allowList: readonly string[] | null;
}

export interface MadeAdminKey {
  readonly key: StoredAdminKey;
  /** The key itself: shown once, never stored. */
  readonly token: string;
}

/**
 * Makes a key; `knownProfiles` are the profile ids of the configuration. `authorize` runs first in
 * the key's transaction and throws to refuse (the caller's rights as they are then).
 */
export async function createAdminKey(
  ctx: AdminKeyContext,
  spec: AdminKeySpec,
  knownProfiles: readonly string[],
  authorize: (trx: Transaction<Database>) => Promise<void> = async () => {},
): Promise<MadeAdminKey> {
  const now = ctx.clock.now();
  checkAdminKeySpec(spec, knownProfiles, now);
  const pepper = pepperOf(ctx.keys);
  const { keyId, token } = newAdminKeyToken();
  const key: StoredAdminKey = {
    keyId,
    name: spec.name,
    scope: spec.scope,
    profiles: spec.profiles,
    allowList: spec.allowList,
    secretHash: hashAdminKey(pepper, token),
    createdAt: formatAtom(now),
    expiresAt: spec.expiresIn === null ? null : formatAtom(addDuration(now, mustParse(spec.expiresIn))),
    lifetime: spec.expiresIn,
    revokedAt: null,
    replacedBy: null,
    // A new line: kept answers of an earlier key with this name are not this key's.
    lineage: keyId,
    lastUsedAt: null,
    lastUsedAddress: null,
  };
  try {
    await ctx.events.change(ctx.db, async (trx, announce) => {
      await authorize(trx);
      if ((await currentAdminKey(trx, spec.name)) !== undefined) throw nameTaken(spec.name);
      await insertAdminKey(trx, key);
      await announce({ type: 'admin_key.created', at: now, keyName: key.name });
    });
  } catch (error) {
    // Two administrators making the same name at once: the unique index decides.
    if (isUniqueViolation(error)) throw nameTaken(spec.name);
    throw error;
  }
  return { key, token };
}

/**
 * A new key for the name, with the same rights; the old one stays valid for `grace` (or until
 * it expires, if sooner), so integrations can switch without downtime. `expiresIn`: the new
 * key's lifetime; default the lifetime the old key was made with.
 */
export async function rotateAdminKey(
  ctx: AdminKeyContext,
  name: string,
  grace: string,
  expiresIn?: string | null,
): Promise<MadeAdminKey & { readonly oldKeyEnds: string }> {
  const now = ctx.clock.now();
  const graceDuration = parseIsoDuration(grace);
  if (graceDuration === null)
    throw new AdminKeyError(`--grace: "${grace}" is not an ISO 8601 duration such as PT1H or P1D`);
  if (!isWithinMaxDuration(graceDuration, now)) throw new AdminKeyError(tooLong('--grace', grace));
  if (expiresIn !== undefined && expiresIn !== null) {
    const lifetime = parseIsoDuration(expiresIn);
    if (lifetime === null)
      throw new AdminKeyError(`--expires-in: "${expiresIn}" is not an ISO 8601 duration such as P90D`);
    if (!isWithinMaxDuration(lifetime, now)) throw new AdminKeyError(tooLong('--expires-in', expiresIn));
  }
  const pepper = pepperOf(ctx.keys);
  const { keyId, token } = newAdminKeyToken();
  return ctx.events.change(ctx.db, async (trx, announce) => {
    const old = await currentAdminKey(trx, name);
    if (old === undefined) throw new AdminKeyError(`there is no current key named "${name}"`);
    const lifetime = expiresIn === undefined ? old.lifetime : expiresIn;
    const graceEnd = formatAtom(addDuration(now, graceDuration));
    const oldKeyEnds =
      old.expiresAt !== null && Date.parse(old.expiresAt) < Date.parse(graceEnd) ? old.expiresAt : graceEnd;
    // Same rights and the same lineage (`...old`): the new key gets the old one's kept answers.
    const key: StoredAdminKey = {
      ...old,
      keyId,
      secretHash: hashAdminKey(pepper, token),
      createdAt: formatAtom(now),
      expiresAt: lifetime === null ? null : formatAtom(addDuration(now, mustParse(lifetime))),
      lifetime,
      lastUsedAt: null,
      lastUsedAddress: null,
    };
    // The old key leaves the "current" slot before the new one takes it (one current key per name).
    if (!(await markAdminKeyReplaced(trx, old.keyId, keyId, oldKeyEnds)))
      throw new AdminKeyError(`key "${name}" changed meanwhile; try again`);
    await insertAdminKey(trx, key);
    await announce({ type: 'admin_key.rotated', at: now, keyName: name });
    return { key, token, oldKeyEnds };
  });
}

/**
 * Revokes every live key of the name (also one in a rotation's grace period); at once, on every
 * instance. `mayRevoke` throws when the caller may not revoke one of the keys, checked on the
 * keys as locked in the revocation's own transaction (a key of the name made meanwhile is
 * neither checked nor revoked).
 */
export async function revokeAdminKey(
  ctx: AdminKeyContext,
  name: string,
  mayRevoke: (trx: Transaction<Database>, keys: readonly StoredAdminKey[]) => Promise<void> = async () => {},
): Promise<number> {
  const now = ctx.clock.now();
  return ctx.events.change(ctx.db, async (trx, announce) => {
    const live = await lockLiveAdminKeysNamed(trx, name);
    await mayRevoke(trx, live);
    const count = await revokeAdminKeys(
      trx,
      live.map((key) => key.keyId),
      formatAtom(now),
    );
    if (count === 0)
      throw new AdminKeyError(`there is no key named "${name}" that is not revoked already`, { kind: 'no-such-key' });
    await announce({ type: 'admin_key.revoked', at: now, keyName: name });
    return count;
  });
}

/**
 * Whether the key a kept `create_admin_key` answer (Idempotency-Key) made may be handed out
 * again: `revoked` once it is revoked, has expired or is gone, `replaced` once it was rotated
 * (its secret then ends with the grace period); null while it is its name's current key.
 */
export async function endOfMadeAdminKey(ctx: AdminKeyContext, keyId: string): Promise<HandOutEnd | null> {
  const key = await findAdminKey(ctx.db, keyId);
  if (key === undefined || key.revokedAt !== null) return 'revoked';
  if (key.replacedBy !== null) return 'replaced';
  return key.expiresAt !== null && Date.parse(key.expiresAt) <= ctx.clock.now().getTime() ? 'revoked' : null;
}

export function listAdminKeys(ctx: AdminKeyContext): Promise<StoredAdminKey[]> {
  return listStoredKeys(ctx.db);
}

/** What a presented admin key turned out to be. */
export type AdminKeyCheck =
  | { readonly valid: true; readonly key: StoredAdminKey }
  /** `keyName` only when the key was genuine (right hash) but revoked or expired. */
  | { readonly valid: false; readonly keyName: string | null; readonly reason: string };

/**
 * Checks a Bearer token that has the admin key form (`vpa_…`). A wrong checksum is refused
 * without a database lookup; otherwise the one row its id names is read and the keyed hash
 * compared in constant time. Expired, revoked and rotated-out keys (past the grace period) are
 * refused like wrong ones (the client sees the same 401; the reason goes to the audit log).
 */
export async function checkAdminKey(ctx: AdminKeyContext, token: string): Promise<AdminKeyCheck> {
  const parsed = parseAdminKeyToken(token);
  if (parsed.kind !== 'admin-key')
    return { valid: false, keyName: null, reason: 'not an admin key: wrong checksum or form' };
  const pepper = ctx.keys.adminKeyPepper();
  if (pepper === null)
    return { valid: false, keyName: null, reason: `no admin key pepper (${ctx.keys.adminKeyPepperPath})` };
  const key = await findAdminKey(ctx.db, parsed.keyId);
  // Compare even when there is no row, so the time taken does not tell which ids exist.
  const matches = constantTimeEquals(hashAdminKey(pepper, token), key?.secretHash ?? '');
  if (key === undefined || !matches) return { valid: false, keyName: null, reason: 'unknown admin key' };
  if (key.revokedAt !== null)
    return { valid: false, keyName: key.name, reason: `admin key "${key.name}" was revoked at ${key.revokedAt}` };
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= ctx.clock.now().getTime()) {
    const why = key.replacedBy === null ? 'expired' : 'was rotated out; its grace period ended';
    return { valid: false, keyName: key.name, reason: `admin key "${key.name}" ${why} at ${key.expiresAt}` };
  }
  return { valid: true, key };
}

/**
 * Notes the use of keys, each at most once per LAST_USED_INTERVAL_MS: this instance skips the
 * write within the interval, and the conditional update skips it when another instance wrote.
 */
export class AdminKeyUse {
  /** When this instance last wrote a key's use, on the monotonic clock (a wall clock set back would skip an hour's writes). */
  readonly #notedAt = new Map<string, MonotonicMs>();

  constructor(private readonly ctx: AdminKeyContext) {}

  async note(key: Pick<StoredAdminKey, 'keyId'>, address: string): Promise<void> {
    const last = this.#notedAt.get(key.keyId);
    if (last !== undefined && elapsedSince(last) < LAST_USED_INTERVAL_MS) return;
    this.#notedAt.set(key.keyId, monotonicNow());
    const now = this.ctx.clock.now();
    await noteAdminKeyUse(
      this.ctx.db,
      key.keyId,
      formatAtom(now),
      address,
      formatAtom(new Date(now.getTime() - LAST_USED_INTERVAL_MS)),
    );
  }
}

/**
 * The rules every new key obeys, whoever makes it (the command, the Admin API); messages name the
 * command's flag, `problem` the Admin API parameter. `now`: when the key would be made (its
 * lifetime is bounded from then).
 */
export function checkAdminKeySpec(spec: AdminKeySpec, knownProfiles: readonly string[], now: Date): void {
  const invalid = (parameter: 'name' | 'profiles' | 'expires_in' | 'allow_list', message: string) =>
    new AdminKeyError(message, { kind: 'invalid', parameter });
  if (!NAME_PATTERN.test(spec.name))
    throw invalid('name', `--name: "${spec.name}" must be 1–64 of A-Z a-z 0-9 . _ - (starting with a letter or digit)`);
  if (spec.name === SECRET_KEY_NAME)
    throw invalid(
      'name',
      `--name: "${SECRET_KEY_NAME}" names the specification's secret in the audit log; choose another name`,
    );
  for (const profileId of spec.profiles ?? []) {
    if (!knownProfiles.includes(profileId))
      throw invalid(
        'profiles',
        `--profile: there is no profile "${profileId}" (profiles: ${knownProfiles.join(', ')})`,
      );
  }
  if (spec.profiles !== null && spec.profiles.length === 0)
    throw invalid('profiles', '--profile: name at least one profile');
  // A directory speaks for whole users (disable, enable, destroy): a limit to profiles would
  // refuse those for every user who also holds another profile's configurations.
  if (spec.scope === 'scim' && spec.profiles !== null)
    throw invalid('profiles', '--profile: a scim key acts on whole users and cannot be limited to profiles');
  if (spec.expiresIn !== null) {
    const lifetime = parseIsoDuration(spec.expiresIn);
    if (lifetime === null)
      throw invalid(
        'expires_in',
        `--expires-in: "${spec.expiresIn}" is not an ISO 8601 duration such as P90D or PT12H`,
      );
    if (!isWithinMaxDuration(lifetime, now)) throw invalid('expires_in', tooLong('--expires-in', spec.expiresIn));
  }
  for (const entry of spec.allowList ?? []) {
    if (!isIpPrefix(entry))
      throw invalid('allow_list', `--allow: "${entry}" is not an IP prefix such as 192.0.2.0/24 or 2001:db8::/32`);
  }
}

function pepperOf(keys: KeyStore): Buffer {
  keys.createAdminKeyPepper();
  const pepper = keys.adminKeyPepper();
  if (pepper === null)
    throw new AdminKeyError(
      `${keys.adminKeyPepperPath} is not 64 hex characters; move it away to have a new one made (keys made with it stop working)`,
    );
  return pepper;
}

/** The refusal of a duration past MAX_DURATION, in the words the Admin API's parameters use too. */
function tooLong(flag: string, text: string): string {
  return `${flag}: "${text}" is longer than ${MAX_DURATION}, the longest duration the portal takes`;
}

function mustParse(text: string): IsoDuration {
  const duration = parseIsoDuration(text);
  if (duration === null) throw new AdminKeyError(`"${text}" is not an ISO 8601 duration`);
  return duration;
}

function nameTaken(name: string): AdminKeyError {
  return new AdminKeyError(
    `a key named "${name}" exists already: rotate it ("vpn-portal admin-key rotate ${name}") or revoke it first`,
    {
      kind: 'name-taken',
    },
  );
}
