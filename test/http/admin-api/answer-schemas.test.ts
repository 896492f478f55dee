// Each call's answer is defined once, in ADMIN_API_CALLS: the routes answer by it, and the test
// portal holds every answer to it, strictly (test/support/strict-answers.ts). These tests show
// that the check refuses what a schema does not describe, on real answers of the real routes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ADMIN_API_CALLS } from '../../../src/protocol/admin-api.js';
import { adminRoutes } from '../../../src/http/admin-api/routes/index.js';
import { startTestPortal } from '../../support/test-portal.js';
import { checkAnswer, UndescribedAnswer } from '../../support/strict-answers.js';

test('every call of ADMIN_API_CALLS has one route, which answers by the call’s own answer definition', () => {
  const calls = Object.values(ADMIN_API_CALLS);
  assert.equal(adminRoutes.length, calls.length);
  for (const call of calls) {
    const routes = adminRoutes.filter((route) => route.path === call.path);
    assert.equal(routes.length, 1, call.path);
    assert.equal(routes[0]?.answer, call.answer, call.path);
  }
});

test('a real answer passes the strict check, and the same answer with a field its schema does not name is refused, at any depth', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  await portal.admin.create({ user_id: 'alice', profile_id: 'employees' });
  const url = `${portal.adminBase}/user_configuration_list?user_id=alice`;
  const answer = await portal.get('/user_configuration_list', { user_id: 'alice' });
  assert.equal(answer.status, 200);
  checkAnswer(portal.adminBase, url, 200, answer.text);

  const body = answer.json() as { user_configuration_list: Record<string, unknown>[] };
  const atTop = JSON.stringify({ ...body, total: 1 });
  assert.throws(() => checkAnswer(portal.adminBase, url, 200, atTop), UndescribedAnswer);
  const [first] = body.user_configuration_list;
  assert.ok(first !== undefined);
  const deep = JSON.stringify({ user_configuration_list: [{ ...first, node_number: 0 }] });
  assert.throws(() => checkAnswer(portal.adminBase, url, 200, deep), /user_configuration_list answered 200 a body/);
  const renamed = JSON.stringify({ user_configuration_list: [{ ...first, expires_at: undefined, expiry: '' }] });
  assert.throws(() => checkAnswer(portal.adminBase, url, 200, renamed), UndescribedAnswer);
});

test('a no-body call that answers a body, and an error with more than its message, are refused', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  await portal.admin.create({ user_id: 'bob', profile_id: 'employees' });
  const enable = `${portal.adminBase}/enable_user`;
  const answer = await portal.post('/enable_user', { user_id: 'bob' });
  assert.equal(answer.status, 204);
  checkAnswer(portal.adminBase, enable, 204, answer.text);
  assert.throws(() => checkAnswer(portal.adminBase, enable, 204, '{}'), UndescribedAnswer);
  const refused = await portal.get('/users', {}, { authorization: 'Bearer wrong' });
  assert.equal(refused.status, 401);
  const users = `${portal.adminBase}/users`;
  checkAnswer(portal.adminBase, users, 401, refused.text);
  const more = JSON.stringify({ ...(refused.json() as object), status: 401 });
  assert.throws(() => checkAnswer(portal.adminBase, users, 401, more), UndescribedAnswer);
});
