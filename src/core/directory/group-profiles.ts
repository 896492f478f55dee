// `scim.groupProfiles`: a directory group grants its members the profiles it names. A user the
// directory provisioned who is in no group granting one of those profiles loses that profile's
// configurations, each as delete_connection deletes it (a receipt each), its managed devices
// registered in that profile, retired as by retire_device, and its enrollment tokens of that
// profile, revoked as by revoke_enrollment_token (a device could otherwise enroll into the
// profile afterwards, by its MDM certificate or a token; nor does a new device register itself
// into it: src/core/enrollment/certificate.ts). Profiles no group names
// are the portal's own business and are left alone, and so are users the directory did not
// provision.
//
// A group change notes, in its own transaction, each member it touched (`scim_users.profile_check`:
// a fresh id for the change, and when); their profiles are checked right after the commit, one
// user at a time, each note cleared once its user is done. Notes that a portal stopped or failing
// in between left behind are checked by the first full reconcile pass once they are five minutes
// old, so no user keeps for good a configuration their groups no longer grant; a check that
// fails so does not fail the change's call, which is saved. A check reads the user's groups as
// they are when it runs and only ever takes configurations away: run late, or twice, it can
// never give back what was taken (a revocation is final), nor go by memberships a later change
// replaced. An edited mapping that may take more notes every directory user at start
// (mapping-change.ts); an instance on another mapping than the one applied last (a rolling
// restart) takes from the members of the group changes it handles only what both mappings
// withhold, and leaves their notes, and checks no pending note, to the instances of the mapping
// applied last, which may take more (its own alone could take what that one grants).
import { randomUUID } from 'node:crypto';
import { asConnectionId, type RevocationId, type UserId } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import { certificatesOfUser } from '../../storage/certificates.js';
import type { Db } from '../../storage/database.js';
import { listStoredDevices } from '../../storage/devices.js';
import { listEnrollmentTokens } from '../../storage/enrollment-tokens.js';
import { storageOutage } from '../../storage/errors.js';
import type { PortalConfig } from '../../config/portal-config.js';
import type { ScimGroupMember } from '../../storage/scim-groups.js';
import {
  clearProfileCheck,
  dateProfileChecks,
  noteProfileChecks,
  pendingProfileChecks,
} from '../../storage/scim-users.js';
import { peersOfUser } from '../../storage/wg-peers.js';
import { groupGrantsUnderAll } from '../access/index.js';
import { portalCall } from '../admin-call.js';
import type { PortalContext } from '../context.js';
import { retireDevice } from '../devices/index.js';
import { revokeEnrollmentToken, tokenState } from '../enrollment/index.js';
import { deleteConnection } from '../users/index.js';
import { callForUser } from './call-for-user.js';
import {
  appliedMappingDiffers,
  applyMappingChange,
  type MappingAtStart,
  parseMapping,
  someMappingApplied,
} from './mapping-change.js';

type GroupProfiles = PortalConfig['scim']['groupProfiles'];

/** The audit log's call for the checks a reconcile pass runs. */
export const GROUP_PROFILES_CALL = 'scim_group_profiles';
/** Pending checks read at a time by the reconcile pass. */
const PENDING_PAGE = 500;
/**
 * How old a note must be for the reconcile pass to take it: younger ones are being checked by
 * the request that made them (the receipts go in its answer), a group of thousands for minutes.
 */
export const PENDING_CHECK_GRACE_MS = 5 * 60_000;
/**
 * Checks one run takes at most (the rest wait for the next run, after the next full pass): a
 * backlog of a million notes does not hold the checks' lock for an hour.
 */
export const PENDING_CHECKS_PER_RUN = 5_000;
/** Managed devices of one user a check reads at most: far more than anyone has. */
const MAX_DEVICES_OF_USER = 10_000;

/** A note dated so that the next pending checks' run takes it, without the grace kept for a request's own checks. */
function dueAtOnce(ctx: PortalContext): Date {
  return new Date(ctx.clock.now().getTime() - PENDING_CHECK_GRACE_MS);
}

/**
 * Once per start, before any request (src/portal.ts; when the database refused, at the next
 * pending checks' run, with `atStart`, the mapping remembered when the instance started, which
 * it then writes over only): when `scim.groupProfiles` may take what the mapping last applied did
 * not, every directory user is noted for a check the next pending checks' run takes
 * (src/core/directory/mapping-change.ts). Answers how many were noted.
 */
export function applyEditedGroupProfiles(ctx: PortalContext, atStart?: MappingAtStart): Promise<number> {
  return applyMappingChange(ctx, dueAtOnce(ctx), atStart);
}

/**
 * What this instance's checks go by. Its own mapping while it is the one last applied; otherwise
 * (another instance started since with a different one: a rolling restart under way, or a
 * mistake) only what both its own and the applied mapping withhold, so that neither a grant the
 * applied one adds nor one this instance's adds is taken, and the notes are left for an instance
 * of the applied mapping, which takes the rest; pending notes such an instance leaves alone. A
 * database that cannot say (`applied` undefined) counts as outdated and takes nothing: the notes
 * stay, nothing is lost.
 */
type MappingStanding =
  | { readonly outdated: false }
  | { readonly outdated: true; readonly applied: GroupProfiles | undefined };

async function mappingStanding(ctx: PortalContext): Promise<MappingStanding> {
  try {
    const applied = await appliedMappingDiffers(ctx);
    if (applied === null) return { outdated: false };
    ctx.logger.warn(
      { applied },
      'another portal instance applies a different scim.groupProfiles: this instance takes only what both mappings withhold, and leaves the profile checks it runs noted for the instances of that mapping; give every instance the same mapping',
    );
    return { outdated: true, applied: parseMapping(applied) };
  } catch {
    return { outdated: true, applied: undefined };
  }
}

/**
 * In a group change's transaction: notes that the profiles of `members` are to be checked.
 * Answers the change's id for applyGroupProfiles; null when no check is needed.
 */
export async function noteGroupProfileChecks(
  ctx: PortalContext,
  trx: Db,
  members: readonly ScimGroupMember[],
): Promise<string | null> {
  if (members.length === 0) return null;
  // Without a mapping of its own, this instance still notes for the instances of the one
  // applied (a rolling restart that brings the first mapping): its checks leave the notes.
  if (ctx.config.scim.groupProfiles.size === 0 && !(await someMappingApplied(trx))) return null;
  const check = randomUUID();
  await noteProfileChecks(
    trx,
    members.map((member) => member.scimId),
    check,
    formatAtom(ctx.clock.now()),
  );
  return check;
}

/**
 * After the change `check` committed: checks its users; answers the receipts of what they lost.
 * The change is saved whatever happens here: a check that fails (a statement refused, the
 * database away) is logged, and it and the users after it keep their notes, due at once, for the
 * pending checks' run after the next full pass (applyPendingGroupProfiles), so the call that made the change still succeeds
 * rather than making its client send again a change already made.
 */
export async function applyGroupProfiles(
  ctx: PortalContext,
  userIds: Iterable<UserId>,
  check: string | null,
): Promise<RevocationId[]> {
  if (check === null) return [];
  const receipts: RevocationId[] = [];
  const users = [...new Set(userIds)];
  const standing = await mappingStanding(ctx);
  const outdated = standing.outdated;
  for (const [index, userId] of users.entries()) {
    try {
      if (!standing.outdated) await checkProfiles(ctx, userId, receipts);
      else if (standing.applied !== undefined) await checkProfiles(ctx, userId, receipts, standing.applied);
      if (outdated) continue;
      await clearProfileCheck(ctx.db, userId, check);
    } catch (error) {
      ctx.logger.error(
        { err: error, userId, unchecked: users.length - index },
        'a directory group change is saved, but the profiles of its members could not all be checked; the reconcile pass checks the rest',
      );
      // No check of this change runs for them any more: the next pass may take them at once
      // rather than after the grace that keeps it off a request's checks under way.
      await dateProfileChecks(ctx.db, users.slice(index), check, formatAtom(dueAtOnce(ctx))).catch((dating: unknown) =>
        ctx.logger.warn({ err: dating }, 'the unchecked members stay noted for the pass after the grace'),
      );
      return receipts;
    }
  }
  // Checked by a mapping no longer the applied one: the next pass of an instance of that one
  // checks them again, at once.
  if (outdated)
    await dateProfileChecks(ctx.db, users, check, formatAtom(dueAtOnce(ctx))).catch((dating: unknown) =>
      ctx.logger.warn({ err: dating }, 'the checked members stay noted for the pass after the grace'),
    );
  return receipts;
}

/**
 * Run after each full reconcile pass (under a lock of its own, one portal instance at a time):
 * runs the checks noted PENDING_CHECK_GRACE_MS ago or earlier and still there (a portal stopped
 * or failing after a group change), as the portal's own call, at most `limit` users a run (the
 * rest at the next run). A user whose check fails is logged and left noted for the next run; a
 * database that is away ends the run, and so does `checkpoint` throwing (the lock was lost, the
 * portal stops), called before each user. Answers how many checks ran.
 */
export async function applyPendingGroupProfiles(
  ctx: PortalContext,
  options: { readonly limit?: number; readonly checkpoint?: () => void } = {},
): Promise<number> {
  const limit = options.limit ?? PENDING_CHECKS_PER_RUN;
  const call = portalCall(GROUP_PROFILES_CALL, {});
  const portalCtx: PortalContext = { ...ctx, call, events: ctx.events.forCall(call) };
  const notedBy = formatAtom(dueAtOnce(ctx));
  let after: UserId | null = null;
  let done = 0;
  let taken = 0;
  while (taken < limit) {
    const page = await pendingProfileChecks(ctx.db, notedBy, after, Math.min(PENDING_PAGE, limit - taken));
    if (page.length === 0) return done;
    // Read after the page: a note made by an instance of a newer mapping is seen as such. Such
    // notes are left to the instances of the mapping applied: checked by this one's, they could
    // lose what that mapping grants, and as nothing clears them, the same first ones would be
    // checked again at every run while the rest waited.
    if ((await mappingStanding(ctx)).outdated) return done;
    for (const { userId, check } of page) {
      options.checkpoint?.();
      after = userId;
      taken += 1;
      try {
        await checkProfiles(portalCtx, userId, []);
        await clearProfileCheck(ctx.db, userId, check);
        done += 1;
      } catch (error) {
        if (storageOutage(error) !== null) throw error;
        ctx.logger.error(
          { err: error, userId },
          'could not check the profiles of a directory user; the next reconcile pass tries again',
        );
      }
    }
  }
  return done;
}

/**
 * Takes from one user the configurations (and devices, enrollment tokens) of mapped profiles no group of theirs grants now; adds
 * their receipts to `receipts` one by one, so those of a check that fails midway are there too.
 * With `applied` (the mapping applied last, when it is not this instance's), only what both
 * mappings withhold.
 */
async function checkProfiles(
  ctx: PortalContext,
  userId: UserId,
  receipts: RevocationId[],
  applied?: GroupProfiles,
): Promise<void> {
  const own = ctx.config.scim.groupProfiles;
  // Undefined also when the user was destroyed meanwhile (by the directory or an administrator):
  // nothing left to take.
  const grants = await groupGrantsUnderAll(ctx.db, applied === undefined ? [own] : [own, applied], userId);
  if (grants === undefined) return;
  const lost = grants.withholds;
  const userCtx = callForUser(ctx, userId);
  // The user's managed devices of those profiles are retired (their configurations and tokens
  // with them): left registered, one would enroll into the profile again by its MDM certificate.
  const devices = (await listStoredDevices(ctx.db, { userId, limit: MAX_DEVICES_OF_USER })).filter(
    (device) => device.state !== 'retired' && lost(device.profileId),
  );
  for (const device of devices) {
    const { revocationId } = await retireDevice(userCtx, device.deviceId, {
      reason: `no directory group of the user grants profile "${device.profileId}"`,
    });
    if (revocationId !== null) receipts.push(revocationId);
  }
  // The user's enrollment tokens of those profiles first, so that no device redeeming one
  // meanwhile makes a configuration after they were read (it is read below, and deleted).
  const now = ctx.clock.now();
  const tokens = (await listEnrollmentTokens(ctx.db, { userId })).filter(
    (token) => lost(token.profileId) && tokenState(token, now) === 'usable',
  );
  for (const token of tokens) await revokeEnrollmentToken(userCtx, userId, token.tokenId);
  const connectionIds = [
    ...(await peersOfUser(ctx.db, userId)).filter((peer) => lost(peer.profileId)).map((peer) => peer.publicKey),
    ...(await certificatesOfUser(ctx.db, userId))
      .filter((certificate) => lost(certificate.profileId))
      .map((certificate) => certificate.commonName),
  ];
  for (const connectionId of connectionIds) {
    const receipt = await deleteConnection(userCtx, userId, asConnectionId(connectionId));
    if (receipt !== null) receipts.push(receipt);
  }
  if (connectionIds.length > 0 || tokens.length > 0 || devices.length > 0)
    ctx.logger.info(
      { userId, configurations: connectionIds.length, enrollmentTokens: tokens.length, devices: devices.length },
      'configurations, enrollment tokens and devices of profiles no SCIM group of the user grants deleted, revoked and retired',
    );
}
