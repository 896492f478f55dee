// Two POSTs at once of one person's userName in two cases (a directory's retry after the name's
// case changed, two portal instances): userName is case-insensitive (RFC 7643), so only one
// User may come of them, and the other answers 409 uniqueness, as it would had it come later.
// The first POST is held right after it found no User of that name, so the race happens every
// time; the unique key of the names decides. PostgreSQL only: the held statement keeps its
// connection, and SQLite has one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createDirectoryUser } from '../../../src/core/directory/index.js';
import { readUser, ScimProblem } from '../../../src/protocol/scim.js';
import { makeAdminKey } from '../../support/admin-keys.js';
import { HoldStatement } from '../../support/hold-statement.js';
import { scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

test('of two POSTs at once of one userName in two cases, one makes the User and the other answers 409', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));

  const hold = new HoldStatement(
    (operation, text) => operation.kind === 'SelectQueryNode' && text.includes('"scim_users"'),
  );
  const ctx = portal.portal.ctx;
  const first = createDirectoryUser(
    { ...ctx, db: ctx.db.withPlugin(hold) },
    readUser({ userName: 'Carol@Example.org' }),
  );
  // Kept from an unhandled rejection while the second POST runs; judged below.
  const outcome = first.then(
    () => null,
    (error: unknown) => error,
  );
  await hold.reached;
  const second = await scim.send('POST', 'Users', { userName: 'carol@example.org', active: true });
  assert.equal(second.status, 201, JSON.stringify(second.body));
  hold.release();

  const error = await outcome;
  assert.ok(
    error instanceof ScimProblem && error.status === 409 && error.scimType === 'uniqueness',
    `the late POST answers 409 uniqueness, not: ${error instanceof Error ? `${error.name} ${error.message}` : String(error)}`,
  );
  assert.deepEqual(await portal.admin.users(), ['carol@example.org'], 'one portal user, the User’s');
  const users = await scim.send('GET', 'Users');
  assert.equal(users.body?.['totalResults'], 1);
});
