// Two DELETEs of one SCIM user at once (a directory's retry of a DELETE still running, two portal
// instances behind one address): the one that finds the user destroyed by the other must answer
// as for any User that is gone, 404 (RFC 7644: the directory takes that as done), not the Admin
// API's 400 "user does not exist", which the directory records as a failed deprovisioning. The
// first DELETE is held right after it read the SCIM user, so the race happens every time.
// PostgreSQL only: the held statement keeps its connection, and SQLite has one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deleteDirectoryUser } from '../../../src/core/directory/index.js';
import { ScimProblem } from '../../../src/protocol/scim.js';
import { makeAdminKey } from '../../support/admin-keys.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

test('of two DELETEs of one user at once, the one that finds it destroyed answers 404 like any User that is gone', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const made = await scim.send('POST', 'Users', { userName: 'dave', active: true });
  const id = String(made.body?.['id']);

  const hold = new HoldStatement(
    (operation, text) => operation.kind === 'SelectQueryNode' && text.includes('"scim_users"'),
  );
  const ctx = portal.portal.ctx;
  const first = deleteDirectoryUser({ ...ctx, db: ctx.db.withPlugin(hold) }, id);
  // Kept from an unhandled rejection while the second DELETE runs; judged below.
  const outcome = first.then(
    () => null,
    (error: unknown) => error,
  );
  await hold.reached;
  const second = await scim.send('DELETE', `Users/${id}`);
  assert.equal(second.status, 204, JSON.stringify(second.body));
  hold.release();

  const error = await outcome;
  assert.ok(
    error instanceof ScimProblem && error.status === 404,
    `the late DELETE answers 404, not: ${error instanceof Error ? `${error.name} ${error.message}` : String(error)}`,
  );
  assert.deepEqual(await portal.admin.users(), []);
});
