// Entra ID's default user mappings send the enterprise extension's manager, and Entra sets it
// with the manager's id as the value itself (Microsoft's SCIM reference: `"path":
// "urn:…:enterprise:2.0:User:manager", "value": "<id>"`), not as RFC 7643's `{"value": "<id>"}`.
// Entra sends every attribute that changed in one PATCH: a person who leaves, whose manager is
// changed in the same cycle, is deactivated by a PATCH that also sets the manager. Refusing it
// whole would leave the person's tunnels running while Entra retries the same PATCH for ever.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeAdminKey } from '../../support/admin-keys.js';
import { patchOp, scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

test('Entra deactivates a user in the PATCH that sets its manager by id: the user is disabled and the manager kept', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const made = await scim.send('POST', 'Users', { userName: 'erin@example.org', active: true });
  const id = String(made.body?.['id']);
  await portal.admin.create({ user_id: 'erin@example.org', profile_id: 'employees' });

  const left = await scim.send(
    'PATCH',
    `Users/${id}`,
    patchOp(
      { op: 'Add', path: `${ENTERPRISE}:manager`, value: '2819c223-7f76-453a-919d-413861904646' },
      { op: 'Replace', path: 'active', value: 'False' },
    ),
  );
  assert.equal(left.status, 200, JSON.stringify(left.body));
  assert.equal(left.body?.['active'], false);
  assert.equal(left.receipts.length, 1);
  assert.deepEqual(await portal.admin.disabledUsers(), ['erin@example.org']);
  assert.deepEqual((left.body?.[ENTERPRISE] as { manager?: unknown } | undefined)?.manager, {
    value: '2819c223-7f76-453a-919d-413861904646',
  });
});
