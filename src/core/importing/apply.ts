// The eduVPN import: refused while the plan has a conflict; otherwise the key files first, then
// one transaction per kind of record in EDUVPN_RECORD_KINDS order (users before the
// configurations that belong to them), each noting what it brought. Every write skips what is
// here already and what an earlier run brought that was removed here since, so a second run
// changes nothing. No event per record (100,000 configurations are not 100,000 webhooks): the
// listings' counter moves once per transaction, and one audit row, by the command line, says
// what was brought.
import { EDUVPN_RECORD_KINDS, type EduVpnDeployment, type EduVpnRecordKind } from '../../eduvpn/deployment.js';
import type { Transaction } from 'kysely';
import type { UserId } from '../../shared/ids.js';
import { runClosingWrites } from '../../storage/closing-writes.js';
import type { Database } from '../../storage/schema.js';
import { lockUsersDisabledHereAmong } from '../../storage/users.js';
import { recordAdminCall } from '../access/index.js';
import { commandLineCall } from '../admin-call.js';
import { adoptKeyFiles } from './key-files.js';
import type { ImportContext, ImportPlan, ImportProgress } from './plan-types.js';
import { prepareEduVpnImport, type PreparedImport } from './plan.js';
import { KIND_STEPS } from './steps.js';

/** The audit log's name for the import's row. */
export const IMPORT_CALL = 'import eduvpn';

/** What a run did: nothing when the plan had conflicts (`applied` null), else what it wrote. */
export interface ImportOutcome {
  readonly plan: ImportPlan;
  readonly applied: {
    readonly keyFiles: number;
    readonly inserted: Readonly<Record<EduVpnRecordKind, number>>;
  } | null;
}

/** Found while writing a kind: a conflict the plan did not see (something changed meanwhile); the kind rolls back. */
export class ImportConflictWhileWriting extends Error {
  override readonly name = 'ImportConflictWhileWriting';
}

export async function importEduVpn(
  ctx: ImportContext,
  deployment: EduVpnDeployment,
  progress: ImportProgress = () => {},
): Promise<ImportOutcome> {
  const prepared = await prepareEduVpnImport(ctx, deployment, progress);
  if (prepared.plan.conflictCount > 0) return { plan: prepared.plan, applied: null };
  const keyFiles = await adoptKeyFiles(prepared.keyAdoptions);
  const inserted = Object.fromEntries(EDUVPN_RECORD_KINDS.map((kind) => [kind, 0])) as Record<EduVpnRecordKind, number>;
  for (const kind of EDUVPN_RECORD_KINDS) inserted[kind] = await importKind(ctx, deployment, prepared, kind, progress);
  const brought = keyFiles + Object.values(inserted).reduce((sum, count) => sum + count, 0);
  if (brought > 0)
    await recordAdminCall(
      ctx,
      commandLineCall(IMPORT_CALL, auditParameters(prepared.plan, keyFiles, inserted)),
      200,
      null,
    );
  return { plan: prepared.plan, applied: { keyFiles, inserted } };
}

/** One kind in one transaction; answers how many records went in. */
async function importKind(
  ctx: ImportContext,
  deployment: EduVpnDeployment,
  prepared: PreparedImport,
  kind: EduVpnRecordKind,
  progress: ImportProgress,
): Promise<number> {
  const step = KIND_STEPS[kind];
  if (prepared.plan.counts[kind].toBring === 0 && prepared.withheld[kind] === 0) return 0;
  const total = await deployment.count(kind);
  return ctx.events.change(
    ctx.db,
    async (trx) => {
      let inserted = 0;
      let done = 0;
      const users = new Set<UserId>();
      await step.walk(ctx.config, trx, deployment, prepared.facts, async (outcome, write, broughtTo) => {
        const [conflict] = outcome.conflicts;
        if (conflict !== undefined)
          throw new ImportConflictWhileWriting(
            `${conflict.record}: ${conflict.reason} (it changed since the check: run the import again)`,
          );
        const written = await write(trx);
        if (step.bringsAll && written < outcome.bring.length)
          throw new ImportConflictWhileWriting(
            `${kind}: ${outcome.bring.length - written} of the records to bring were made here while the import ran (by the Admin API: the same user, key, common name or address); run the import again, which names them`,
          );
        inserted += written;
        for (const userId of broughtTo) users.add(userId);
        done += outcome.bring.length + outcome.alreadyHere + outcome.expired + outcome.removedHere.length;
        progress({ phase: 'importing', kind, done, total });
      });
      return { inserted, users };
    },
    // As a create: the listings' counter moves once, as the transaction's last lock.
    async (trx, { inserted, users }, closingWrites) => {
      await noneDisabledMeanwhile(trx, kind, users);
      await runClosingWrites(
        trx,
        step.listed && inserted > 0 ? [...closingWrites, { kind: 'listing-generation' }] : closingWrites,
      );
      return inserted;
    },
  );
}

/**
 * Fails the kind when a user of a configuration it brings was disabled here while it ran (after
 * the check of that page read it unlocked): nothing of the kind is written, and the next run
 * withholds that user's. The users' rows are share-locked (PostgreSQL) from here to the commit
 * only, so that a disable waits for the commit (and revokes what the import brought), but never
 * for the whole walk.
 */
async function noneDisabledMeanwhile(
  trx: Transaction<Database>,
  kind: EduVpnRecordKind,
  users: ReadonlySet<UserId>,
): Promise<void> {
  if (users.size === 0) return;
  const [disabled] = await lockUsersDisabledHereAmong(trx, [...users]);
  if (disabled !== undefined)
    throw new ImportConflictWhileWriting(
      `${kind}: user ${disabled} was disabled here while the import ran (run the import again: it brings that user no configuration)`,
    );
}

/** The audit row's parameters: where from, and how many of each kind (and key files) were brought. */
function auditParameters(
  plan: ImportPlan,
  keyFiles: number,
  inserted: Readonly<Record<EduVpnRecordKind, number>>,
): Record<string, string> {
  const parameters: Record<string, string> = {
    source: plan.source,
    schema_version: plan.schemaVersion,
    key_files: String(keyFiles),
  };
  for (const kind of EDUVPN_RECORD_KINDS) parameters[kind] = String(inserted[kind]);
  return parameters;
}
