// Enrollment tokens: an administrator (or an MDM with a write key) asks for a token for a user
// and profile and hands it to a device; the device redeems it at the public `enroll` endpoint
// with its own public key (or CSR) and receives its configuration, so neither the MDM nor the
// portal ever holds the device's private key. A token is one secret (src/keys/enrollment-token.ts),
// stored only as a keyed hash, usable `uses` times until `valid_for` ends. A use is taken by one
// conditional update in the transaction that stores the configuration: of any number of
// concurrent redemptions exactly `uses` succeed. Disabling the user revokes its tokens;
// destroying it deletes them.
import { enrollmentTokenId, hashEnrollmentToken, newEnrollmentToken } from '../../keys/enrollment-token.js';
import { constantTimeEquals } from '../../shared/constant-time.js';
import type { ProfileId, UserId, WireGuardKey } from '../../shared/ids.js';
import { addDuration, durationMilliseconds, parseIsoDuration } from '../../shared/iso-duration.js';
import { formatAtom } from '../../shared/time.js';
import type { Db } from '../../storage/database.js';
import type { HandOutEnd } from '../../storage/idempotency.js';
import { enrollmentTokenInfoSchema, type EnrollmentTokenInfo } from '../../protocol/admin-api.js';
import {
  enrollmentTokenRow,
  findEnrollmentToken,
  insertEnrollmentToken,
  listEnrollmentTokens as listStoredTokens,
  revokeEnrollmentToken as revokeStoredToken,
  takeEnrollmentTokenUse,
  type StoredEnrollmentToken,
} from '../../storage/enrollment-tokens.js';
import { ensureUser } from '../../storage/users.js';
import { callerName } from '../admin-call.js';
import type { PortalContext } from '../context.js';
import { createConfiguration, type IssuedConfiguration } from '../issuing/index.js';
import { deviceForIssue, type DeviceReference } from '../devices/index.js';
import type { Platform } from '../../shared/platforms.js';
import { PortalError } from '../errors.js';
import { configurationExpiry } from '../expiry/index.js';
import { assertProfileAllowed, noSuchProfile, reachableProfiles } from '../access/index.js';

export type { StoredEnrollmentToken } from '../../storage/enrollment-tokens.js';

/** The longest a token may stay redeemable: long enough to stage devices, short enough that a forgotten one ends. */
export const MAX_TOKEN_VALIDITY = 'P90D';
/** The display name of a configuration made by an enrollment whose token names none. */
export const DEFAULT_ENROLLMENT_DISPLAY_NAME = 'Enrollment';

export interface EnrollmentTokenRequest {
  readonly userId: UserId;
  readonly profileId: ProfileId;
  readonly displayName: string | undefined;
  /** The configuration's lifetime, by create's rules; undefined: sessionExpiry. */
  readonly expiresIn: string | undefined;
  readonly uses: number;
  /** How long the token can be redeemed (ISO 8601 duration). */
  readonly validFor: string;
  /** The registered device the configuration is for (it then replaces the device's configuration in the profile). */
  readonly device?: DeviceReference;
  /** The device's platform as the caller says it; with a device it must be the device's. */
  readonly platform?: Platform;
}

export interface MadeEnrollmentToken {
  readonly stored: StoredEnrollmentToken;
  /** The token itself: shown once, never stored. */
  readonly token: string;
}

/** Makes a token; the user is made when missing (as create does) and must not be disabled. */
export async function createEnrollmentToken(
  ctx: PortalContext,
  request: EnrollmentTokenRequest,
): Promise<MadeEnrollmentToken> {
  assertProfileAllowed(ctx, request.profileId);
  if (!ctx.config.profiles.some((profile) => profile.profileId === request.profileId))
    throw noSuchProfile(ctx, request.profileId);
  const now = ctx.clock.now();
  // Refused now, not when the device redeems it.
  configurationExpiry(ctx.config, now, request.expiresIn);
  const validFor = parseIsoDuration(request.validFor);
  const longest = parseIsoDuration(MAX_TOKEN_VALIDITY);
  // Compared as lengths from now; a duration past any date JavaScript holds has no length (NaN).
  const length = validFor === null ? Number.NaN : durationMilliseconds(validFor, now);
  if (
    validFor === null ||
    longest === null ||
    !Number.isFinite(length) ||
    length <= 0 ||
    length > durationMilliseconds(longest, now)
  ) {
    throw new PortalError(
      'invalid-parameter',
      `invalid value for "valid_for": a duration longer than zero and at most ${MAX_TOKEN_VALIDITY}`,
    );
  }
  const device = request.device === undefined ? null : await deviceForIssue(ctx, request.device, request);
  const pepper = pepperOf(ctx);
  const { tokenId, token } = newEnrollmentToken();
  const stored: StoredEnrollmentToken = {
    tokenId,
    secretHash: hashEnrollmentToken(pepper, token),
    userId: request.userId,
    profileId: request.profileId,
    displayName: request.displayName ?? null,
    expiresIn: request.expiresIn ?? null,
    uses: request.uses,
    usesLeft: request.uses,
    createdAt: formatAtom(now),
    createdBy: ctx.call === undefined ? null : callerName(ctx.call.caller),
    expiresAt: formatAtom(addDuration(now, validFor)),
    revokedAt: null,
    lastUsedAt: null,
    deviceId: device?.deviceId ?? null,
  };
  await ctx.events.change(ctx.db, async (trx, announce) => {
    const user = await ensureUser(trx, request.userId, formatAtom(now));
    if (user.isDisabled) throw new PortalError('user-disabled', 'user is disabled');
    await insertEnrollmentToken(trx, stored);
    await announce({
      type: 'enrollment_token.created',
      at: now,
      tokenId,
      userId: request.userId,
      profileId: request.profileId,
    });
  });
  return { stored, token };
}

/** The tokens the caller may see (of its profiles), of one user or all, newest first. */
export function listEnrollmentTokens(ctx: PortalContext, userId: UserId | undefined): Promise<StoredEnrollmentToken[]> {
  return listStoredTokens(ctx.db, {
    ...(userId === undefined ? {} : { userId }),
    profiles: reachableProfiles(ctx),
  });
}

/** Revokes a token at once, for every portal instance; a token revoked already is left as it is. */
export async function revokeEnrollmentToken(ctx: PortalContext, userId: UserId, tokenId: string): Promise<void> {
  await ctx.events.change(ctx.db, async (trx, announce) => {
    const token = await findEnrollmentToken(trx, tokenId);
    if (token === undefined || token.userId !== userId)
      throw new PortalError('no-such-token', 'the user has no enrollment token with this "token_id"');
    assertProfileAllowed(ctx, token.profileId);
    const at = ctx.clock.now();
    if (await revokeStoredToken(trx, tokenId, formatAtom(at))) {
      await announce({
        type: 'enrollment_token.revoked',
        at,
        tokenId,
        userId: token.userId,
        profileId: token.profileId,
      });
    }
  });
}

/** Where a token stands, for listings. */
export function tokenState(token: StoredEnrollmentToken, now: Date): 'usable' | 'used-up' | 'expired' | 'revoked' {
  if (token.revokedAt !== null) return 'revoked';
  if (token.usesLeft <= 0) return 'used-up';
  if (Date.parse(token.expiresAt) <= now.getTime()) return 'expired';
  return 'usable';
}

/**
 * Whether the token a kept `enrollment_token` answer (Idempotency-Key) made may be handed out
 * again: `revoked` once it can no longer be redeemed (revoked, used up, expired, or gone with its
 * user); null while it can.
 */
export async function endOfMadeEnrollmentToken(ctx: PortalContext, tokenId: string): Promise<HandOutEnd | null> {
  const token = await findEnrollmentToken(ctx.db, tokenId);
  return token === undefined || tokenState(token, ctx.clock.now()) !== 'usable' ? 'revoked' : null;
}

/**
 * A token as `enrollment_tokens` lists it: its row's columns in the same names, with where it
 * stands. The schema keeps only the columns the wire shows (never `secret_hash`). A token that
 * would be usable but whose profile left the configuration is `profile-removed`: redeeming it is
 * refused (410) until the profile returns.
 */
export function enrollmentTokenInfo(ctx: PortalContext, token: StoredEnrollmentToken, now: Date): EnrollmentTokenInfo {
  const state = tokenState(token, now);
  const offered = ctx.config.profiles.some((profile) => profile.profileId === token.profileId);
  return enrollmentTokenInfoSchema.parse({
    ...enrollmentTokenRow(token),
    state: state === 'usable' && !offered ? 'profile-removed' : state,
  });
}

export interface Enrollment {
  /** The token as the device sent it. */
  readonly token: string;
  /** The device's own keys: at least one (the portal never makes a key for an enrollment). */
  readonly publicKey: WireGuardKey | undefined;
  readonly csr: string | undefined;
  readonly preferTcp: boolean;
  readonly accept: string | undefined;
}

/**
 * A device redeems a token: its configuration, for the token's user and profile, made with
 * the device's own key. An unknown, expired, used-up or revoked token is refused (410) and
 * changes nothing; so is one whose user was disabled (which revoked it) or destroyed (which deleted it),
 * and one whose profile is no longer in the configuration (its use kept, should the profile return).
 */
export async function redeemEnrollmentToken(ctx: PortalContext, enrollment: Enrollment): Promise<IssuedConfiguration> {
  const tokenId = enrollmentTokenId(enrollment.token);
  if (tokenId === null)
    throw new PortalError(
      'invalid-parameter',
      'invalid value for "enrollment_token": not an enrollment token (wrong form or checksum)',
    );
  if (enrollment.publicKey === undefined && enrollment.csr === undefined) {
    throw new PortalError(
      'invalid-parameter',
      'an enrollment needs the device\'s own key: "public_key" (WireGuard, as `wg pubkey` prints it) or "csr" (OpenVPN); the portal makes no key for a device',
    );
  }
  const pepper = ctx.keys.adminKeyPepper();
  const stored = await findEnrollmentToken(ctx.db, tokenId);
  // Compared even when there is no row, so the time taken does not tell which ids exist.
  const matches =
    pepper !== null && constantTimeEquals(hashEnrollmentToken(pepper, enrollment.token), stored?.secretHash ?? '');
  if (stored === undefined || !matches)
    throw new PortalError('gone', 'unknown enrollment token: it never existed, or its user was destroyed');
  assertUsable(stored, ctx.clock.now());
  // A profile taken out of the configuration since: refused as any token the device cannot use,
  // not with create's 404, which names every profile there is to whoever holds a token.
  if (!ctx.config.profiles.some((profile) => profile.profileId === stored.profileId))
    throw new PortalError('gone', "the enrollment token's profile is no longer offered");
  return createConfiguration(ctx, {
    userId: stored.userId,
    profileId: stored.profileId,
    displayName: stored.displayName ?? DEFAULT_ENROLLMENT_DISPLAY_NAME,
    preferTcp: enrollment.preferTcp,
    expiresIn: stored.expiresIn ?? undefined,
    accept: enrollment.accept,
    ...(enrollment.publicKey === undefined ? {} : { publicKey: enrollment.publicKey }),
    ...(enrollment.csr === undefined ? {} : { csr: enrollment.csr }),
    enrollmentTokenId: tokenId,
    ...(stored.deviceId === null ? {} : { device: { deviceId: stored.deviceId } }),
    // The check above answers most refusals early; this update is what decides.
    consume: async (trx) => {
      const now = ctx.clock.now();
      if (await takeEnrollmentTokenUse(trx, tokenId, formatAtom(now))) return;
      await refuseUnusableToken(trx, tokenId, now);
    },
  });
}

/** Throws the 410 that says why the token cannot be used (the update found no row to take a use from). */
async function refuseUnusableToken(db: Db, tokenId: string, now: Date): Promise<never> {
  const token = await findEnrollmentToken(db, tokenId);
  if (token === undefined)
    throw new PortalError('gone', 'unknown enrollment token: it never existed, or its user was destroyed');
  assertUsable(token, now);
  throw new PortalError('gone', 'enrollment token could not be used');
}

function assertUsable(token: StoredEnrollmentToken, now: Date): void {
  const state = tokenState(token, now);
  switch (state) {
    case 'revoked':
      throw new PortalError('gone', `enrollment token was revoked at ${token.revokedAt ?? ''}`);
    case 'used-up':
      throw new PortalError('gone', `enrollment token is used up (${token.uses} of ${token.uses} uses taken)`);
    case 'expired':
      throw new PortalError('gone', `enrollment token expired at ${token.expiresAt}`);
    case 'usable':
      return;
    default:
      state satisfies never;
  }
}

function pepperOf(ctx: PortalContext): Buffer {
  ctx.keys.createAdminKeyPepper();
  const pepper = ctx.keys.adminKeyPepper();
  if (pepper === null)
    throw new PortalError(
      'unavailable',
      `${ctx.keys.adminKeyPepperPath} is not 64 hex characters; tokens cannot be made`,
    );
  return pepper;
}
