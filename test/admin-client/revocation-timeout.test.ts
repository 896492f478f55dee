// The typed client gives a revocation its own, longer timeout: a disable, delete or destroy of a
// user with very many configurations takes longer than the other calls' 30 s, and one given up
// by its caller goes on all the same, so it would look failed while it was made.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AdminApiClient } from '../../src/admin-client/admin-api-client.js';
import { startTestPortal } from '../support/test-portal.js';

test('with a timeout shorter than any call takes, a revocation still gets its answer and is made', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  const impatient = new AdminApiClient({
    baseUrl: `${portal.portal.url}${portal.portal.ctx.config.basePath}/`,
    key: portal.secret,
    timeoutMs: 1,
  });

  const receipt = await impatient.disableUser('alice');
  assert.ok(receipt !== null, 'the revocation answered with its receipt');
  assert.deepEqual(await portal.admin.disabledUsers(), ['alice']);
});
