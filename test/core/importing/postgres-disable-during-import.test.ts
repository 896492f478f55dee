// A disable while the eduVPN import's configurations step runs (PostgreSQL: SQLite has one
// writer): the step takes minutes for 100,000 configurations in one transaction, and a disable
// must not wait for it past databaseTimeout; what the step would bring the user then is not
// brought, by that run or the next. The dry run, which writes nothing, locks nothing either.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { importEduVpn, planEduVpnImport, type ImportContext } from '../../../src/core/importing/index.js';
import { asUserId } from '../../../src/shared/ids.js';
import { lockUser } from '../../../src/storage/users.js';
import { peersWithKeys } from '../../../src/storage/wg-peers.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { eduVpnPeer, eduVpnUser, emptyRecords, inMemoryDeployment } from '../../support/in-memory-eduvpn.js';
import { startImportPortal } from '../../support/import-portal.js';
import type { TestPortal } from '../../support/test-portal.js';

let portal: TestPortal;
let ctx: ImportContext;

before(async () => {
  portal = await startImportPortal();
  ctx = portal.portal.ctx;
});
after(() => portal.close());

test('a user disabled while the import writes its configurations is disabled at once, and gets none of them', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('vic')];
  const first = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.equal(first.applied?.inserted.users, 1);
  const issued = eduVpnPeer('vic', 140);
  records.wireGuardPeers = [issued];

  // The import's configurations step stands still after its inserts, its transaction open.
  const hold = new HoldStatement(
    (node, text) => node.kind === 'InsertQueryNode' && text.includes('"imported_records"'),
  );
  const importing = importEduVpn({ ...ctx, db: ctx.db.withPlugin(hold) }, inMemoryDeployment(records));
  const failed = assert.rejects(importing, {
    name: 'ImportConflictWhileWriting',
    message: /user vic was disabled here/,
  });
  await hold.reached;
  const began = Date.now();
  assert.notEqual(await portal.admin.disableUser('vic'), null, 'a receipt');
  const took = Date.now() - began;
  assert.ok(took < ctx.config.databaseTimeoutMs, `disable_user answered in ${took} ms, within databaseTimeout`);
  hold.release();
  await failed;
  assert.deepEqual(await peersWithKeys(ctx.db, [issued.publicKey]), [], 'the step wrote nothing');

  // The next run withholds it, and it stays out once vic is enabled again.
  const again = await importEduVpn(ctx, inMemoryDeployment(records));
  assert.deepEqual(again.plan.conflicts, []);
  assert.equal(again.applied?.inserted.wireGuardPeers, 0);
  await portal.admin.enableUser('vic');
  const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
  assert.equal(plan.counts.wireGuardPeers.toBring, 0);
  assert.equal(plan.counts.wireGuardPeers.removedHere, 1);
  assert.deepEqual(await peersWithKeys(ctx.db, [issued.publicKey]), []);
});

test('the dry run locks no user: it answers while a destroy holds the row of a user it would bring configurations to', async () => {
  const records = emptyRecords();
  records.users = [eduVpnUser('yan')];
  await importEduVpn(ctx, inMemoryDeployment(records));
  records.wireGuardPeers = [eduVpnPeer('yan', 141)];
  let release = (): void => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let locked = (): void => {};
  const isLocked = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const destroying = ctx.db.transaction().execute(async (trx) => {
    await lockUser(trx, asUserId('yan'));
    locked();
    await released;
  });
  await isLocked;
  try {
    const began = Date.now();
    const plan = await planEduVpnImport(ctx, inMemoryDeployment(records));
    const took = Date.now() - began;
    assert.equal(plan.counts.wireGuardPeers.toBring, 1);
    assert.ok(took < ctx.config.databaseTimeoutMs / 2, `the dry run answered in ${took} ms`);
  } finally {
    release();
    await destroying;
  }
});
