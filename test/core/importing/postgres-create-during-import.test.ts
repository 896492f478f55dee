// Admin API calls that take what the eduVPN import is about to write, between the check of a
// page and its insert (PostgreSQL: SQLite's import holds the one write lock from check to
// commit): the kind rolls back and the next run names what stands in the way, instead of a
// record silently not written, noted as brought, and left by every later run as removed here.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { OperationNode } from 'kysely';
import { importEduVpn, planEduVpnImport, type ImportContext } from '../../../src/core/importing/index.js';
import { usersWithIds } from '../../../src/storage/users.js';
import { peersWithKeys } from '../../../src/storage/wg-peers.js';
import { asUserId } from '../../../src/shared/ids.js';
import { HoldStatement } from '../../support/hold-statement.js';
import {
  eduVpnPeer,
  eduVpnUser,
  emptyRecords,
  inMemoryDeployment,
  type EduVpnRecords,
} from '../../support/in-memory-eduvpn.js';
import { startImportPortal } from '../../support/import-portal.js';
import type { TestPortal } from '../../support/test-portal.js';

let portal: TestPortal;
let ctx: ImportContext;

before(async () => {
  portal = await startImportPortal();
  ctx = portal.portal.ctx;
});
after(() => portal.close());

type Matcher = (node: OperationNode, text: string) => boolean;

/**
 * Holds the first statement `matches` picks in the import's writing phase: the import plans
 * first (the dry run's walk), so the statements a plan alone runs are counted and passed.
 */
async function holdWhileWriting(records: EduVpnRecords, matches: Matcher): Promise<HoldStatement> {
  let inPlan = 0;
  const counting = new HoldStatement((node, text) => {
    if (matches(node, text)) inPlan++;
    return false;
  });
  await planEduVpnImport({ ...ctx, db: ctx.db.withPlugin(counting) }, inMemoryDeployment(records));
  let seen = 0;
  return new HoldStatement((node, text) => matches(node, text) && ++seen === inPlan + 1);
}

/**
 * Runs the import of `records` held at `hold`, lets `meanwhile` happen there, and answers the
 * import's failure; the story fails if it succeeded.
 */
async function failedImport(
  records: EduVpnRecords,
  hold: HoldStatement,
  meanwhile: () => Promise<void>,
): Promise<unknown> {
  const importing = importEduVpn({ ...ctx, db: ctx.db.withPlugin(hold) }, inMemoryDeployment(records));
  const outcome = importing.then(
    (done) => ({ done }),
    (error: unknown) => ({ error }),
  );
  await hold.reached;
  await meanwhile();
  hold.release();
  const result = await outcome;
  assert.ok(
    'error' in result,
    `the import failed (it answered ${JSON.stringify('done' in result ? result.done.applied : null)})`,
  );
  return result.error;
}

test('a create that takes an imported configuration’s address while the import writes rolls the step back, and the next run names it', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('ann')];
  await importEduVpn(ctx, inMemoryDeployment(records));
  // Index 0: the first address this portal's empty pool hands out too.
  const issued = eduVpnPeer('ann', 0);
  records.wireGuardPeers = [issued];

  // The step's check of the page has read the addresses (free), nothing is written yet.
  const hold = await holdWhileWriting(
    records,
    (node, text) => node.kind === 'SelectQueryNode' && text.includes('"wg_peers"') && text.includes('"ip_six"'),
  );
  const error = await failedImport(records, hold, async () => {
    const created = await portal.admin.create(
      { user_id: 'bob', profile_id: 'employees' },
      'application/x-wireguard-profile',
    );
    assert.match(created.body, /Address = 10\.44\.0\.2\//, 'the create took the address of ann’s configuration');
  });
  assert.match(String(error), /ImportConflictWhileWriting/);
  assert.deepEqual(await peersWithKeys(ctx.db, [issued.publicKey]), []);

  // Not left as removed here: a conflict, until the administrator frees the address.
  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  assert.equal(plan.counts.wireGuardPeers.removedHere, 0);
  assert.deepEqual(
    plan.conflicts.map((conflict) => conflict.record),
    [issued.publicKey],
  );
  assert.match(plan.conflicts[0]?.reason ?? '', /are used here by configuration/);
});

test('a create that makes a user eduVPN has disabled while the import writes the users rolls the step back, and the next run names it', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('cid', { isDisabled: true })];
  records.wireGuardPeers = [eduVpnPeer('cid', 10)];

  // The users' check has read who is here (not cid), nothing is written yet.
  const hold = await holdWhileWriting(
    records,
    (node, text) =>
      node.kind === 'SelectQueryNode' && text.includes('"users"') && text.includes('"cid"') && !text.includes('"join'),
  );
  const error = await failedImport(records, hold, async () => {
    await portal.admin.create({ user_id: 'cid', profile_id: 'employees' }, 'application/x-wireguard-profile');
  });
  assert.match(String(error), /ImportConflictWhileWriting/);
  assert.deepEqual(await peersWithKeys(ctx.db, [records.wireGuardPeers[0]?.publicKey ?? '']), []);
  const cid = (await usersWithIds(ctx.db, [asUserId('cid')])).get(asUserId('cid'));
  assert.equal(cid?.isDisabled, false, 'cid is the user the create made');

  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  assert.deepEqual(
    plan.conflicts.map((conflict) => conflict.record),
    ['cid'],
  );
  assert.match(plan.conflicts[0]?.reason ?? '', /enabled here and disabled in eduVPN/);
});
