// What an admin key limited to some profiles (`--profile`) may see and touch: the one place that
// decides it, which every call asks. The rules (docs/admin-keys.md, "Profile limits"): create
// only in its profiles; every listing and record shows only things of its profiles (a user's or
// a device's configurations, enrollment tokens, devices, sessions, receipts; users with a
// configuration there); delete_connection, extend and revoke_enrollment_token only things in its
// profiles; retire_device only a device of its profiles whose configurations and unrevoked
// enrollment tokens all lie in them; and the calls that act on a user as a whole (disable_user,
// enable_user, destroy, delete_user_authorizations) only users whose configurations, enrollment
// tokens and devices all lie in its profiles, and who have at least one configuration: so such a
// key never changes a configuration, a token, a device nor a user outside its reach. A user with
// no configuration in its profiles does not exist for it (the reference's 400 for an unknown user).
// The user and device checks run inside the change's transaction, after the row is locked, so a
// configuration added meanwhile in another profile cannot slip past them.
import type { Db } from '../../storage/database.js';
import { configurationsOfDevice, deviceProfilesOfUser, type StoredDevice } from '../../storage/devices.js';
import {
  enrollmentTokenProfilesOfUser,
  unrevokedEnrollmentTokenProfilesOfDevice,
} from '../../storage/enrollment-tokens.js';
import { configurationProfilesOfUser } from '../../storage/users.js';
import type { NodeNumber, ProfileId, UserId } from '../../shared/ids.js';
import { describeKey, profileLimit, type AdminCall } from '../admin-call.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';

/** The profiles a call may see and touch, for a query's filter; null: every profile. */
export function reachableProfiles(ctx: PortalContext): readonly ProfileId[] | null {
  const limit = profileLimit(ctx.call);
  return limit === null ? null : [...limit];
}

/** Whether the call may see and touch things of the profile. */
export function withinReach(ctx: PortalContext, profileId: string): boolean {
  const limit = profileLimit(ctx.call);
  return limit === null || limit.has(profileId as ProfileId);
}

/** Of things that each lie in one profile (profiles, configurations, tokens), those the call may see, in their order. */
export function visibleToCall<T extends { readonly profileId: ProfileId }>(
  ctx: PortalContext,
  items: readonly T[],
): T[] {
  return items.filter((item) => withinReach(ctx, item.profileId));
}

/** The profiles of the portal a call may see, in the configuration's order. */
export function visibleProfiles<P extends { readonly profileId: ProfileId }>(
  ctx: PortalContext,
  profiles: readonly P[],
): P[] {
  return visibleToCall(ctx, profiles);
}

/**
 * The nodes of the profiles a call may see; null: every node. A limited key learns of no other
 * node (`profiles` names it only its own profiles' nodes), in an answer, a header or an error.
 */
export function visibleNodes(ctx: PortalContext): ReadonlySet<NodeNumber> | null {
  if (profileLimit(ctx.call) === null) return null;
  return new Set(
    visibleProfiles(ctx, ctx.config.profiles).flatMap((profile) => profile.nodes.map((node) => node.nodeNumber)),
  );
}

/**
 * Whether the call may know the user exists: always for a key for every profile; for a limited
 * key only a user with a configuration in its profiles (whom its `users` lists). Any other user
 * answers as an unknown one, so a limited key cannot probe which user ids exist elsewhere.
 */
export async function userInSight(ctx: PortalContext, db: Db, userId: UserId): Promise<boolean> {
  const limit = profileLimit(ctx.call);
  if (limit === null) return true;
  return (await configurationProfilesOfUser(db, userId)).some((profileId) => limit.has(profileId));
}

/** Refuses (403) a profile outside the key's profiles. */
export function assertProfileAllowed(ctx: PortalContext, profileId: string): void {
  const limit = profileLimit(ctx.call);
  if (limit === null || ctx.call === undefined || limit.has(profileId as ProfileId)) return;
  throw new PortalError(
    'not-allowed',
    `${describeKey(ctx.call)} may not use profile "${profileId}" (it is limited to: ${[...limit].join(', ')})`,
  );
}

/**
 * Refuses (403) a call on a user as a whole unless everything of the user (configurations,
 * enrollment tokens, devices) is in the key's profiles, naming what lies outside.
 */
export async function assertUserWithinReach(ctx: PortalContext, db: Db, userId: UserId): Promise<void> {
  const limit = profileLimit(ctx.call);
  if (limit === null || ctx.call === undefined) return;
  await refuseUserOutside(ctx.call, limit, db, userId, await configurationProfilesOfUser(db, userId));
}

/**
 * userInSight, then assertUserWithinReach, on one reading of the user's configuration profiles:
 * false when the call may not know the user; a refusal (403) when something of the user lies
 * outside the key's profiles; true otherwise.
 */
export async function userInSightAndWithinReach(ctx: PortalContext, db: Db, userId: UserId): Promise<boolean> {
  const limit = profileLimit(ctx.call);
  if (limit === null || ctx.call === undefined) return true;
  const configurationProfiles = await configurationProfilesOfUser(db, userId);
  if (!configurationProfiles.some((profileId) => limit.has(profileId))) return false;
  await refuseUserOutside(ctx.call, limit, db, userId, configurationProfiles);
  return true;
}

async function refuseUserOutside(
  call: AdminCall,
  limit: ReadonlySet<ProfileId>,
  db: Db,
  userId: UserId,
  configurationProfiles: readonly ProfileId[],
): Promise<void> {
  const key = describeKey(call);
  const allowed = [...limit].join(', ');
  if (configurationProfiles.length === 0) {
    throw new PortalError(
      'not-allowed',
      `${key} may not change user "${userId}" as a whole: the user has no configuration in its profiles (${allowed})`,
    );
  }
  const held = heldOutside(limit, [
    { what: 'configurations', profiles: configurationProfiles },
    { what: 'enrollment tokens', profiles: await enrollmentTokenProfilesOfUser(db, userId) },
    { what: 'devices', profiles: await deviceProfilesOfUser(db, userId) },
  ]);
  if (held !== null) {
    throw new PortalError(
      'not-allowed',
      `${key} may not change user "${userId}" as a whole: the user has ${held}, outside its profiles (${allowed})`,
    );
  }
}

/**
 * Refuses (403) retiring (suspending, resuming) a device outside the key's profiles, or one that
 * has configurations or enrollment tokens not revoked yet (which it would take away or revoke)
 * outside them, naming what lies outside. Each is whole: it does all of it or nothing.
 */
export async function assertDeviceWithinReach(
  ctx: PortalContext,
  db: Db,
  device: StoredDevice,
  verb: 'retire' | 'suspend' | 'resume' = 'retire',
): Promise<void> {
  assertProfileAllowed(ctx, device.profileId);
  const limit = profileLimit(ctx.call);
  if (limit === null || ctx.call === undefined) return;
  const configurations = await configurationsOfDevice(db, device.deviceId);
  const held = heldOutside(limit, [
    { what: 'configurations', profiles: configurations.map((configuration) => configuration.profileId) },
    { what: 'enrollment tokens', profiles: await unrevokedEnrollmentTokenProfilesOfDevice(db, device.deviceId) },
  ]);
  if (held !== null) {
    throw new PortalError(
      'not-allowed',
      `${describeKey(ctx.call)} may not ${verb} device "${device.deviceId}": it has ${held}, outside its profiles (${[...limit].join(', ')})`,
    );
  }
}

/** "configurations in guests, devices in guests and …" for what lies outside the limit; null when nothing does. */
function heldOutside(
  limit: ReadonlySet<ProfileId>,
  things: readonly { readonly what: string; readonly profiles: readonly ProfileId[] }[],
): string | null {
  const held = things
    .map(({ what, profiles }) => {
      const outside = [...new Set(profiles.filter((profileId) => !limit.has(profileId)))].sort();
      return outside.length === 0 ? null : `${what} in ${outside.join(', ')}`;
    })
    .filter((entry) => entry !== null);
  const last = held.pop();
  if (last === undefined) return null;
  return held.length === 0 ? last : `${held.join(', ')} and ${last}`;
}

/** 404 for a profile the configuration does not have: the reference's text, then the profiles the key may use. */
export function noSuchProfile(ctx: PortalContext, profileId: string): PortalError {
  const known = visibleProfiles(ctx, ctx.config.profiles).map((profile) => profile.profileId);
  return new PortalError(
    'no-such-profile',
    `no such "profile_id": "${profileId}"; known profiles: ${known.join(', ')}`,
  );
}
