// An edited `scim.groupProfiles` is applied to everyone, not only to users whose groups change
// later: the portal remembers the mapping it last applied (`portal_state`), and a start whose
// mapping may take what the remembered one did not notes every directory user for a profile
// check, due at once, before it answers any request, so the profile checks after the full
// reconcile pass it runs at start take what the new mapping no longer grants (a revocation is
// final: an administrator who takes a grant away expects it gone). A mapping that only adds
// grants, or unmaps a profile, takes nothing more: it is remembered and nobody is noted. A
// mapping on a database that never remembered one, or remembered `{}` (the first start with a
// mapping, one after it was `{}`, or the first of this version) is remembered and notes nobody:
// it takes at each member's next group change, as it always did, since revoking everyone's
// configurations at once is not undone, and an upgrade or a first mapping before the directory
// pushed its groups must not do it by surprise.
import { randomUUID } from 'node:crypto';
import type { PortalConfig } from '../../config/portal-config.js';
import { formatAtom } from '../../shared/time.js';
import { deleteState, readState, replaceState, writeState } from '../../storage/portal-state.js';
import { noteProfileChecks, SCIM_IDS_PER_STATEMENT, scimIdsAfter } from '../../storage/scim-users.js';
import type { Db } from '../../storage/database.js';
import { APPLIED_MAPPING_KEY, canonicalMapping, parseMapping } from '../access/index.js';
import type { PortalContext } from '../context.js';

export { APPLIED_MAPPING_KEY, canonicalMapping, parseMapping };

type GroupProfiles = PortalConfig['scim']['groupProfiles'];

/** The `portal_state` key of a mapping whose users are being noted: there while a start notes them. */
export const NOTING_KEY = 'scim_group_profiles_noting';

/**
 * Whether a check by `next` may take from a user what a check by `previous` leaves them, with
 * the same groups: some profile `next` maps was not mapped before (now granted by groups alone),
 * or a group granted a profile `next` still maps and grants it no more. Otherwise every group
 * grants under `next` all it granted of each profile `next` maps, and nothing more can go.
 */
export function mayTakeMore(previous: GroupProfiles, next: GroupProfiles): boolean {
  const mappedBefore = new Set([...previous.values()].flat());
  for (const profileId of new Set([...next.values()].flat())) {
    if (!mappedBefore.has(profileId)) return true;
    for (const [group, profiles] of previous)
      if (profiles.includes(profileId) && !(next.get(group) ?? []).includes(profileId)) return true;
  }
  return false;
}

/**
 * Whether some instance applies a mapping that groups grant or take by: read by an instance
 * without one in a group change's transaction, so that it notes the change's members for the
 * instances of that mapping rather than leaving them unchecked.
 */
export async function someMappingApplied(db: Db): Promise<boolean> {
  const applied = await readState(db, APPLIED_MAPPING_KEY);
  return applied !== null && applied !== canonicalMapping(new Map());
}

/** Whether another portal instance started since with a different mapping (null: the same). */
export async function appliedMappingDiffers(ctx: PortalContext): Promise<string | null> {
  const applied = await readState(ctx.db, APPLIED_MAPPING_KEY);
  return applied === null || applied === canonicalMapping(ctx.config.scim.groupProfiles) ? null : applied;
}

/** The mapping remembered as applied when this instance started (null: none): what a delayed apply may write over. */
export interface MappingAtStart {
  readonly applied: string | null;
}

/** Read at start, before the apply: kept for a delayed apply should the start's writes be refused. */
export async function mappingAtStart(ctx: PortalContext): Promise<MappingAtStart> {
  return { applied: await readState(ctx.db, APPLIED_MAPPING_KEY) };
}

/**
 * Once per start (before any request, or at the profile checks if the database refused): when
 * the configured mapping is not the one last applied and may take more, notes every directory
 * user for a check, dated `due` (the reconcile pass takes them at its first run rather than
 * after the grace kept for a request's own checks: none runs for these), a page of users per
 * statement. The mapping is remembered first, so that an instance still on the older one (a
 * rolling restart) sees, after reading a note of this one, that it is outdated and leaves the
 * note (appliedMappingDiffers). A start stopped while noting leaves NOTING_KEY, and the next
 * start notes everyone again. Answers how many were noted.
 *
 * A delayed apply (`atStart`: what the start read) writes only over the mapping remembered when
 * this instance started: one another instance remembered since, started later, stays the one
 * applied, and this instance is outdated (its checks go by both, group-profiles.ts).
 */
export async function applyMappingChange(ctx: PortalContext, due: Date, atStart?: MappingAtStart): Promise<number> {
  const configured = ctx.config.scim.groupProfiles;
  const canonical = canonicalMapping(configured);
  const remembered = await readState(ctx.db, APPLIED_MAPPING_KEY);
  const unfinished = await readState(ctx.db, NOTING_KEY);
  if (remembered === canonical && unfinished === null) return 0;
  const over = atStart === undefined ? undefined : atStart.applied;
  if (over !== undefined && remembered !== over) return keptNewer(ctx);
  // No mapping applied before (none remembered, or `{}`): the first one takes nothing at start.
  if (unfinished === null && (remembered === null || parseMapping(remembered).size === 0)) {
    // Nothing to remember: a portal without a mapping writes nothing (it may be on a read-only database).
    if (configured.size === 0) return 0;
    if (!(await remember(ctx.db, canonical, over))) return keptNewer(ctx);
    ctx.logger.info(
      'scim.groupProfiles is remembered as the mapping applied; it takes from each member at their next group change, and a later edit that may take more is applied to everyone at the start after it',
    );
    return 0;
  }
  if (unfinished === null && !mayTakeMore(parseMapping(remembered), configured)) {
    if (!(await remember(ctx.db, canonical, over))) return keptNewer(ctx);
    if (remembered !== null)
      ctx.logger.info(
        'scim.groupProfiles differs from the mapping last applied but takes nothing more: nobody is noted',
      );
    return 0;
  }
  // The note that noting is under way commits with the mapping, or neither does.
  const written = await ctx.db
    .transaction()
    .execute(async (trx) => {
      await writeState(trx, NOTING_KEY, canonical);
      if (await remember(trx, canonical, over)) return true;
      throw new NewerMapping();
    })
    .catch((error: unknown) => {
      if (error instanceof NewerMapping) return false;
      throw error;
    });
  if (!written) return keptNewer(ctx);
  const noted = await noteEveryone(ctx, formatAtom(due));
  await deleteState(ctx.db, NOTING_KEY);
  ctx.logger.info(
    { noted },
    'scim.groupProfiles may take what the mapping last applied did not: every directory user is noted for a profile check, which the next reconcile passes run',
  );
  return noted;
}

/** Another instance remembered a mapping after this one's start: its write is rolled back. */
class NewerMapping extends Error {}

/** Remembers `canonical` as the mapping applied: over `over` only, when given; answers whether it was written. */
async function remember(db: Db, canonical: string, over: string | null | undefined): Promise<boolean> {
  if (over === undefined) {
    await writeState(db, APPLIED_MAPPING_KEY, canonical);
    return true;
  }
  return replaceState(db, APPLIED_MAPPING_KEY, over, canonical);
}

function keptNewer(ctx: PortalContext): number {
  ctx.logger.warn(
    'another portal instance remembered its scim.groupProfiles after this one started: that mapping stays the one applied, and this instance takes only what both withhold; give every instance the same mapping',
  );
  return 0;
}

/** Notes every directory user for one check, `at`, a page of them per statement; answers how many. */
async function noteEveryone(ctx: PortalContext, at: string): Promise<number> {
  const check = randomUUID();
  let noted = 0;
  let after: string | null = null;
  for (;;) {
    const ids = await scimIdsAfter(ctx.db, after, SCIM_IDS_PER_STATEMENT);
    if (ids.length === 0) return noted;
    await noteProfileChecks(ctx.db, ids, check, at);
    noted += ids.length;
    after = ids[ids.length - 1] ?? null;
  }
}
