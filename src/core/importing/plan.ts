// The dry run of the eduVPN import: reads the whole deployment and compares it with this
// portal, writing nothing. The import itself runs the same checks first and goes on only when
// they found no conflict.
import { EDUVPN_RECORD_KINDS, type EduVpnDeployment, type EduVpnRecordKind } from '../../eduvpn/deployment.js';
import { addDuration, subtractDurationClamped } from '../../shared/iso-duration.js';
import { formatAtom } from '../../shared/time.js';
import { heldUserIds } from '../../storage/legal-holds.js';
import { aclPermissionsOfUsers } from './acl.js';
import type { ImportFacts } from './configurations.js';
import {
  countKeyDependents,
  findKeysNeededAndMissing,
  planKeyFiles,
  setAsideNodeKeysNotNeeded,
  type KeyAdoption,
} from './key-files.js';
import {
  ConflictList,
  emptyCounts,
  ListedRecords,
  type ImportContext,
  type ImportPlan,
  type ImportProgress,
  type KindCounts,
  type RemovedHere,
} from './plan-types.js';
import { usersDisabledHereAtStart } from './removed-here.js';
import { findRevokedInEduVpn } from './revoked-there.js';
import { CHECK_ORDER, KIND_STEPS } from './steps.js';

/** A plan with what the import needs to carry it out. */
export interface PreparedImport {
  readonly plan: ImportPlan;
  readonly facts: ImportFacts;
  readonly keyAdoptions: readonly KeyAdoption[];
  /** Per kind, how many records the import notes as left without bringing them (of users disabled here, or refused by eduVPN's ACL). */
  readonly withheld: Readonly<Record<EduVpnRecordKind, number>>;
}

/** What importing `deployment` would do; changes nothing. */
export async function planEduVpnImport(
  ctx: ImportContext,
  deployment: EduVpnDeployment,
  progress: ImportProgress = () => {},
): Promise<ImportPlan> {
  return (await prepareEduVpnImport(ctx, deployment, progress)).plan;
}

export async function prepareEduVpnImport(
  ctx: ImportContext,
  deployment: EduVpnDeployment,
  progress: ImportProgress,
): Promise<PreparedImport> {
  const now = ctx.clock.now();
  const facts: ImportFacts = {
    now: formatAtom(now),
    warningHorizon: formatAtom(addDuration(now, ctx.config.expiryWarning)),
    earliestConfiguration: new Map(),
    namedAuthorizations: new Map(),
    usersDisabledHere: new Set(),
    usersDisabledHereAtStart: await usersDisabledHereAtStart(ctx.db),
    // As the housekeeping reckons the retention: history it would keep is brought.
    historySince: formatAtom(subtractDurationClamped(now, ctx.config.connectionLogRetention)),
    heldUsers: new Set(await heldUserIds(ctx.db, formatAtom(now))),
    nodeOfConnection: new Map(),
    openVpnPerProfile: new Map(),
    wireGuardPerNode: new Map(),
    aclPermissions: await aclPermissionsOfUsers(ctx.config, deployment),
  };
  const conflicts = new ConflictList();
  const removedHere = new ListedRecords<RemovedHere>();
  const keyDependents = await countKeyDependents(ctx);
  const keysGiven = await planKeyFiles(ctx, deployment.keys, keyDependents, conflicts);
  const counts = Object.fromEntries(EDUVPN_RECORD_KINDS.map((kind) => [kind, emptyCounts()])) as Record<
    EduVpnRecordKind,
    KindCounts
  >;
  const withheld = Object.fromEntries(EDUVPN_RECORD_KINDS.map((kind) => [kind, 0])) as Record<EduVpnRecordKind, number>;
  for (const kind of CHECK_ORDER) {
    const total = await deployment.count(kind);
    const tally = counts[kind];
    let done = 0;
    await KIND_STEPS[kind].walk(ctx.config, ctx.db, deployment, facts, async (outcome) => {
      tally.toBring += outcome.bring.length;
      tally.alreadyHere += outcome.alreadyHere;
      tally.expired += outcome.expired;
      tally.conflicting += outcome.conflicts.length;
      tally.removedHere += outcome.removedHere.length;
      withheld[kind] += outcome.withheld.length;
      for (const conflict of outcome.conflicts) conflicts.add(conflict);
      for (const removed of outcome.removedHere) removedHere.add(removed);
      done +=
        outcome.bring.length +
        outcome.alreadyHere +
        outcome.expired +
        outcome.removedHere.length +
        outcome.conflicts.length;
      progress({ phase: 'checking', kind, done, total });
    });
  }
  const publicKeysNotNeeded = findKeysNeededAndMissing(ctx, deployment.keys, facts, keyDependents, conflicts);
  const { adoptions: keyAdoptions, notNeeded } = setAsideNodeKeysNotNeeded(keysGiven, facts, keyDependents);
  const keysNotNeeded = [...publicKeysNotNeeded, ...notNeeded];
  await findRevokedInEduVpn(ctx.db, facts, conflicts, counts);
  const plan: ImportPlan = {
    source: deployment.description,
    schemaVersion: deployment.schemaVersion,
    counts,
    keyFiles: keyAdoptions.map(({ name, path, state }) => ({ name, path, state })),
    keysNotNeeded,
    keyWarnings: keyAdoptions.flatMap(({ name, unchecked }) =>
      unchecked === undefined ? [] : [{ name, reason: unchecked }],
    ),
    conflicts: conflicts.listed,
    conflictCount: conflicts.count,
    removedHere: removedHere.listed,
    removedHereCount: removedHere.count,
    leftBehind: await deployment.leftBehind(),
  };
  return { plan, facts, keyAdoptions, withheld };
}
