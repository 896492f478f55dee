// Managing users: listing them, disabling and enabling (a reversible suspension), destroying
// (user, configurations and authorizations gone), deleting one connection, and deleting
// OAuth authorizations only.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WireGuardKey } from '../../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import { startPortalWithNode } from '../../support/portal-with-node.js';
import { errorBody } from '../../support/raw-http.js';
import { defaultTestConfig, startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

/** Creates a configuration and returns its connection id (the WireGuard public key). */
async function provision(portal: TestPortal, userId: string, displayName = 'Admin API'): Promise<string> {
  const response = await portal.post('/create', {
    user_id: userId,
    profile_id: 'employees',
    display_name: displayName,
  });
  assert.equal(response.status, 200, response.text);
  return wireGuardPublicKey(parseWireGuardFile(response.text).interface.get('PrivateKey') as WireGuardKey);
}

async function configurationIds(portal: TestPortal, userId: string): Promise<string[]> {
  return (await portal.admin.userConfigurationList(userId)).map((entry) => entry.connection_id).sort();
}

async function listedConnectionIds(portal: TestPortal): Promise<string[]> {
  const lists = await portal.admin.connectionList(true);
  return Object.values(lists)
    .flat()
    .map((entry) => entry.connection_id)
    .sort();
}

async function authorizationKeys(portal: TestPortal): Promise<string[]> {
  const rows = await portal.portal.ctx.db
    .selectFrom('oauth_authorizations')
    .select('auth_key')
    .orderBy('auth_key')
    .execute();
  return rows.map((row) => row.auth_key);
}

/** The store has an authorizations table though nothing in the portal creates rows yet (no OAuth server). */
async function authorize(portal: TestPortal, userId: string, authKey: string): Promise<void> {
  await portal.portal.ctx.db
    .insertInto('oauth_authorizations')
    .values({
      auth_key: authKey,
      user_id: userId,
      client_id: 'org.eduvpn.app.linux',
      scope: 'config',
      authorized_at: '2026-01-01T00:00:00+00:00',
      expires_at: '2099-04-01T00:00:00+00:00',
    })
    .execute();
}

test('users lists every user sorted by id; disabled_users only the disabled ones', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  assert.deepEqual((await portal.get('/users')).json(), { users: [] });
  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: [] });

  for (const userId of ['carol', 'alice', 'dave', 'bob']) await provision(portal, userId);
  await portal.post('/disable_user', { user_id: 'dave' });
  await portal.post('/disable_user', { user_id: 'bob' });

  assert.deepEqual((await portal.get('/users')).json(), { users: ['alice', 'bob', 'carol', 'dave'] });
  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: ['bob', 'dave'] });
});

test('every call naming a user that does not exist answers 400 "user does not exist"', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const someKey = await provision(portal, 'alice');

  const calls: { path: string; form: Record<string, string> }[] = [
    { path: '/disable_user', form: { user_id: 'nobody' } },
    { path: '/enable_user', form: { user_id: 'nobody' } },
    { path: '/destroy', form: { user_id: 'nobody' } },
    { path: '/delete_connection', form: { user_id: 'nobody', connection_id: someKey } },
    { path: '/delete_user_authorizations', form: { user_id: 'nobody' } },
  ];
  for (const { path, form } of calls) {
    const response = await portal.post(path, form);
    assert.equal(response.status, 400, path);
    assert.equal(response.text, '{"error":"user does not exist"}', path);
  }
  const listing = await portal.get('/user_configuration_list', { user_id: 'nobody' });
  assert.equal(listing.status, 400);
  assert.equal(errorBody(listing.text), 'user does not exist');

  // None of them touched the user that does exist.
  assert.deepEqual((await portal.get('/users')).json(), { users: ['alice'] });
  assert.deepEqual(await configurationIds(portal, 'alice'), [someKey]);
});

test('user_id is required and validated by every call that takes it', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  for (const path of [
    '/disable_user',
    '/enable_user',
    '/destroy',
    '/delete_connection',
    '/delete_user_authorizations',
  ]) {
    const missing = await portal.post(path, {});
    assert.equal(missing.status, 400, path);
    assert.equal(errorBody(missing.text), 'missing post parameter "user_id"', path);
    const tooLong = await portal.post(path, { user_id: 'u'.repeat(256), connection_id: 'x' });
    assert.equal(tooLong.status, 400, path);
    assert.equal(errorBody(tooLong.text), 'invalid value for "user_id"', path);
  }
  const missingQuery = await portal.get('/user_configuration_list');
  assert.equal(missingQuery.status, 400);
  assert.equal(errorBody(missingQuery.text), 'missing query parameter "user_id"');
  const tooLong = await portal.get('/user_configuration_list', { user_id: 'u'.repeat(256) });
  assert.equal(tooLong.status, 400);
  assert.equal(errorBody(tooLong.text), 'invalid value for "user_id"');
  const empty = await portal.get('/user_configuration_list', { user_id: '' });
  assert.equal(empty.status, 400);
  assert.equal(errorBody(empty.text), 'invalid value for "user_id"');
  const repeated = await portal.request('/user_configuration_list?user_id=a&user_id=b', {
    headers: { authorization: `Bearer ${portal.secret}` },
  });
  assert.equal(repeated.status, 400);
  assert.equal(errorBody(repeated.text), 'value of query parameter "user_id" MUST be string');
});

test('disable_user suspends: configurations stay listed for the user but leave connection_list; enable_user brings them back', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const laptop = await provision(portal, 'alice', 'Laptop');
  const phone = await provision(portal, 'alice', 'Phone');
  const bobs = await provision(portal, 'bob');
  assert.deepEqual(await listedConnectionIds(portal), [laptop, phone, bobs].sort());

  const disabled = await portal.post('/disable_user', { user_id: 'alice' });
  assert.equal(disabled.status, 204);
  assert.equal(disabled.text, '');
  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: ['alice'] });
  assert.deepEqual(await configurationIds(portal, 'alice'), [laptop, phone].sort());
  assert.deepEqual(await listedConnectionIds(portal), [bobs]);
  const connected = (await portal.get('/connected_users', { show_all: 'on' })).json();
  assert.deepEqual(connected, { connected_users: { employees: ['bob'] } });

  // Disabling twice is harmless.
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);

  const enabled = await portal.post('/enable_user', { user_id: 'alice' });
  assert.equal(enabled.status, 204);
  assert.equal(enabled.text, '');
  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: [] });
  assert.deepEqual(await listedConnectionIds(portal), [laptop, phone, bobs].sort());
  assert.deepEqual(await configurationIds(portal, 'alice'), [laptop, phone].sort());
});

test("disable_user ends the user's OAuth authorizations, as the reference does", async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  await provision(portal, 'alice');
  await provision(portal, 'bob');
  await authorize(portal, 'alice', 'alice-app');
  await authorize(portal, 'bob', 'bob-app');

  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  assert.deepEqual(await authorizationKeys(portal), ['bob-app']);
});

test("destroy removes the user, all of its configurations and its authorizations, and nobody else's", async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  await provision(portal, 'alice');
  await provision(portal, 'alice');
  const bobs = await provision(portal, 'bob');
  await authorize(portal, 'alice', 'alice-app');
  await authorize(portal, 'alice', 'alice-other-app');
  await authorize(portal, 'bob', 'bob-app');

  const destroyed = await portal.post('/destroy', { user_id: 'alice' });
  assert.equal(destroyed.status, 204);
  assert.equal(destroyed.text, '');

  assert.deepEqual((await portal.get('/users')).json(), { users: ['bob'] });
  assert.equal((await portal.get('/user_configuration_list', { user_id: 'alice' })).status, 400);
  assert.deepEqual(await listedConnectionIds(portal), [bobs]);
  assert.deepEqual(await authorizationKeys(portal), ['bob-app']);
  const peersOfAlice = await portal.portal.ctx.db
    .selectFrom('wg_peers')
    .select('public_key')
    .where('user_id', '=', 'alice')
    .execute();
  assert.deepEqual(peersOfAlice, []);

  // A second destroy finds no such user.
  const again = await portal.post('/destroy', { user_id: 'alice' });
  assert.equal(again.status, 400);
  assert.equal(errorBody(again.text), 'user does not exist');

  // The user can be provisioned again from scratch.
  await provision(portal, 'alice');
  assert.deepEqual((await portal.get('/users')).json(), { users: ['alice', 'bob'] });
});

test('delete_connection removes exactly one configuration of the user', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const laptop = await provision(portal, 'alice', 'Laptop');
  const phone = await provision(portal, 'alice', 'Phone');
  const bobs = await provision(portal, 'bob');

  const deleted = await portal.post('/delete_connection', { user_id: 'alice', connection_id: laptop });
  assert.equal(deleted.status, 204);
  assert.equal(deleted.text, '');
  assert.deepEqual(await configurationIds(portal, 'alice'), [phone]);
  assert.deepEqual(await listedConnectionIds(portal), [phone, bobs].sort());
  // The user itself stays.
  assert.deepEqual((await portal.get('/users')).json(), { users: ['alice', 'bob'] });
});

test("delete_connection answers 204 for an unknown id or another user's id, and then changes nothing", async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const alices = await provision(portal, 'alice');
  const bobs = await provision(portal, 'bob');
  const unknown = wireGuardPublicKey('WGnotIssuedByThisPortal00000000000000000000=' as WireGuardKey);

  const notIssued = await portal.post('/delete_connection', { user_id: 'alice', connection_id: unknown });
  assert.equal(notIssued.status, 204);
  const someoneElses = await portal.post('/delete_connection', { user_id: 'alice', connection_id: bobs });
  assert.equal(someoneElses.status, 204);
  // Deleting the same configuration twice: the second time it is simply not there.
  assert.equal((await portal.post('/delete_connection', { user_id: 'alice', connection_id: alices })).status, 204);
  assert.equal((await portal.post('/delete_connection', { user_id: 'alice', connection_id: alices })).status, 204);

  assert.deepEqual(await configurationIds(portal, 'alice'), []);
  assert.deepEqual(await configurationIds(portal, 'bob'), [bobs]);
  assert.deepEqual(await listedConnectionIds(portal), [bobs]);
});

test('delete_connection refuses a connection_id that is not a key and requires one', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const alices = await provision(portal, 'alice');

  for (const connectionId of [
    '',
    'not-a-key',
    `${alices}x`,
    alices.slice(0, 43),
    `${alices.slice(0, 42)}|=`,
    `${alices}\n`,
  ]) {
    const response = await portal.post('/delete_connection', { user_id: 'alice', connection_id: connectionId });
    assert.equal(response.status, 400, JSON.stringify(connectionId));
    assert.equal(errorBody(response.text), 'invalid value for "connection_id"');
  }
  const missing = await portal.post('/delete_connection', { user_id: 'alice' });
  assert.equal(missing.status, 400);
  assert.equal(errorBody(missing.text), 'missing post parameter "connection_id"');
  assert.deepEqual(await configurationIds(portal, 'alice'), [alices]);
});

test('delete_user_authorizations deletes only authorizations: configurations stay, the user stays enabled', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const alices = await provision(portal, 'alice');
  await provision(portal, 'bob');
  await authorize(portal, 'alice', 'alice-app');
  await authorize(portal, 'alice', 'alice-other-app');
  await authorize(portal, 'bob', 'bob-app');

  const response = await portal.post('/delete_user_authorizations', { user_id: 'alice' });
  assert.equal(response.status, 204);
  assert.equal(response.text, '');
  assert.deepEqual(await authorizationKeys(portal), ['bob-app']);
  assert.deepEqual(await configurationIds(portal, 'alice'), [alices]);
  assert.ok((await listedConnectionIds(portal)).includes(alices), "alice's configuration is still listed");
  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: [] });

  // A user without authorizations: nothing to delete, still fine.
  assert.equal((await portal.post('/delete_user_authorizations', { user_id: 'alice' })).status, 204);
});

test('delete_user_authorizations also reads user_id from the query string, where the reference reads it', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const alices = await provision(portal, 'alice');
  await provision(portal, 'bob');
  await authorize(portal, 'alice', 'alice-app');
  await authorize(portal, 'bob', 'bob-app');

  // A script written for the reference: POST with the user in the URL and no body.
  const response = await portal.request('/delete_user_authorizations?user_id=alice', {
    method: 'POST',
    headers: { authorization: `Bearer ${portal.secret}` },
  });
  assert.equal(response.status, 204);
  assert.deepEqual(await authorizationKeys(portal), ['bob-app']);
  assert.deepEqual(await configurationIds(portal, 'alice'), [alices]);

  // The same with an empty form body.
  await authorize(portal, 'alice', 'alice-app-2');
  const withEmptyForm = await portal.request('/delete_user_authorizations?user_id=alice', {
    method: 'POST',
    headers: { authorization: `Bearer ${portal.secret}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: '',
  });
  assert.equal(withEmptyForm.status, 204);
  assert.deepEqual(await authorizationKeys(portal), ['bob-app']);

  const unknownInQuery = await portal.request('/delete_user_authorizations?user_id=nobody', {
    method: 'POST',
    headers: { authorization: `Bearer ${portal.secret}` },
  });
  assert.equal(unknownInQuery.status, 400);
  assert.equal(errorBody(unknownInQuery.text), 'user does not exist');
});

test('delete_user_authorizations refuses a user_id array in the form body, as every POST does, even with a user in the query string', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  await provision(portal, 'alice');
  await authorize(portal, 'alice', 'alice-app');

  for (const url of ['/delete_user_authorizations', '/delete_user_authorizations?user_id=alice']) {
    const response = await portal.request(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${portal.secret}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'user_id[]=bob',
    });
    assert.equal(response.status, 400, url);
    assert.equal(errorBody(response.text), 'value of post parameter "user_id" MUST be string', url);
  }
  assert.deepEqual(await authorizationKeys(portal), ['alice-app']);
});

test("on the node: disable_user removes the user's peers at once, enable_user puts them back, delete and destroy remove them", async (t) => {
  const profile = defaultTestConfig.ProfileList[0];
  assert.ok(profile !== undefined, 'the default configuration has a profile');
  const { portal, peersOnNode, close } = await startPortalWithNode({
    config: (nodeUrl) => ({ ProfileList: [{ ...profile, nodeUrl }] }),
  });
  t.after(close);
  const peerKeys = async () => [...(await peersOnNode()).keys()].sort();

  const laptop = await provision(portal, 'alice', 'Laptop');
  const phone = await provision(portal, 'alice', 'Phone');
  const bobs = await provision(portal, 'bob');
  assert.deepEqual(await peerKeys(), [laptop, phone, bobs].sort());

  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  assert.deepEqual(await peerKeys(), [bobs]);

  // The devices keep their files: enabling puts the very same keys and addresses back.
  assert.equal((await portal.post('/enable_user', { user_id: 'alice' })).status, 204);
  const peers = await peersOnNode();
  assert.deepEqual([...peers.keys()].sort(), [laptop, phone, bobs].sort());
  assert.deepEqual(peers.get(laptop), ['10.44.0.2/32', 'fd44::2/128']);

  // delete_user_authorizations disconnects nobody.
  assert.equal((await portal.post('/delete_user_authorizations', { user_id: 'alice' })).status, 204);
  assert.deepEqual(await peersOnNode(), peers);

  assert.equal((await portal.post('/delete_connection', { user_id: 'alice', connection_id: laptop })).status, 204);
  assert.deepEqual(await peerKeys(), [phone, bobs].sort());
  assert.equal((await portal.post('/destroy', { user_id: 'alice' })).status, 204);
  assert.deepEqual(await peerKeys(), [bobs]);
});
