// Who may talk to the Admin API: the source-address allow-list, the key file that switches the
// API on, and the Bearer token — checked in that order, before any routing.
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { KeyStore } from '../../../src/keys/key-store.js';
import { errorBody, rawRequest } from '../../support/raw-http.js';
import { startTestPortal } from '../../support/test-portal.js';

const AUTH_CHALLENGE = 'Bearer realm="Admin API"';

test('a request without a token, with a wrong token or with a lowercase "bearer" gets 401 and a Bearer challenge', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const attempts: Record<string, Record<string, string>> = {
    'no Authorization header': {},
    'a wrong token': { authorization: 'Bearer 0000000000000000000000000000000000000000000000000000000000000000' },
    'the right secret with a lowercase scheme': { authorization: `bearer ${portal.secret}` },
    'the right secret without a scheme': { authorization: portal.secret },
    'the right secret after two spaces': { authorization: `Bearer  ${portal.secret}` },
    'a prefix of the right secret': { authorization: `Bearer ${portal.secret.slice(0, 32)}` },
    'Basic credentials': { authorization: `Basic ${Buffer.from(`admin:${portal.secret}`).toString('base64')}` },
  };
  for (const [what, headers] of Object.entries(attempts)) {
    const response = await rawRequest(`${portal.adminBase}/users`, { headers });
    assert.equal(response.status, 401, what);
    assert.equal(errorBody(response.text), 'authentication required', what);
    assert.equal(response.headers['www-authenticate'], AUTH_CHALLENGE, what);
    assert.match(response.headers['content-type'] ?? '', /^application\/json(;|$)/, what);
  }

  const withSecret = await portal.get('/users');
  assert.equal(withSecret.status, 200);
  assert.deepEqual(withSecret.json(), { users: [] });
});

test('the generated secret is 64 hex characters', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  assert.match(portal.secret, /^[0-9a-f]{64}$/);
});

test('a key file written by hand with a trailing newline still authenticates', async (t) => {
  const portal = await startTestPortal({ adminApi: false });
  t.after(() => portal.close());

  // An administrator writes the key file with an editor that adds a final newline.
  const secret = `${'c0ffee'.repeat(10)}beef`;
  const keyFile = new KeyStore(portal.portal.ctx.config.keyDir).adminApiKeyPath;
  writeFileSync(keyFile, `${secret}\n`, { mode: 0o600 });
  assert.equal(readFileSync(keyFile, 'utf8'), `${secret}\n`);

  const response = await eventually(() => portal.get('/users', {}, { authorization: `Bearer ${secret}` }), 200);
  assert.deepEqual(response.json(), { users: [] });
  const withNewlineEncoded = await portal.get('/users', {}, { authorization: `Bearer ${secret}%0A` });
  assert.equal(withNewlineEncoded.status, 401);
});

test('without a key file the API answers 503, and turns on when the secret is generated, without a restart', async (t) => {
  const portal = await startTestPortal({ adminApi: false });
  t.after(() => portal.close());

  for (const headers of [{}, { authorization: 'Bearer anything' }] as Record<string, string>[]) {
    const response = await rawRequest(`${portal.adminBase}/users`, { headers });
    assert.equal(response.status, 503);
    assert.match(errorBody(response.text), /^admin API disabled/);
    assert.match(errorBody(response.text), /generate-secrets --admin-api/);
  }
  const create = await portal.post(
    '/create',
    { user_id: 'alice', profile_id: 'employees' },
    { authorization: 'Bearer x' },
  );
  assert.equal(create.status, 503);

  // The administrator runs `vpn-portal generate-secrets --admin-api` while the portal runs.
  const keys = new KeyStore(portal.portal.ctx.config.keyDir);
  assert.equal(keys.createAdminApiKey().created, true);
  const secret = readFileSync(keys.adminApiKeyPath, 'utf8');

  // The portal re-reads key files at most once a second, so the change shows within that time.
  const users = await eventually(() => portal.get('/users', {}, { authorization: `Bearer ${secret}` }), 200);
  assert.deepEqual(users.json(), { users: [] });
  const wrong = await portal.get('/users', {}, { authorization: 'Bearer x' });
  assert.equal(wrong.status, 401);

  // Removing the key file switches the API off again.
  rmSync(keys.adminApiKeyPath);
  await eventually(() => portal.get('/users', {}, { authorization: `Bearer ${secret}` }), 503);
});

/** Repeats a request until it answers `status`, for at most 3 s; returns that response. */
async function eventually<R extends { status: number }>(call: () => Promise<R>, status: number): Promise<R> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    const response = await call();
    if (response.status === status || Date.now() > deadline) {
      assert.equal(response.status, status);
      return response;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test('a client outside adminApi.allowList gets 403, even with the right secret and for unknown paths', async (t) => {
  const portal = await startTestPortal({ config: { adminApi: { allowList: ['10.0.0.0/8'] } } });
  t.after(() => portal.close());

  for (const path of ['/users', '/create', '/no-such-call', '/openapi.json']) {
    const response = await portal.get(path);
    assert.equal(response.status, 403, path);
    assert.equal(errorBody(response.text), 'source address not allowed', path);
  }
  const unauthenticated = await rawRequest(`${portal.adminBase}/users`);
  assert.equal(unauthenticated.status, 403);
});

test('the allow-list is checked before the key file: a disallowed client cannot learn that the API is disabled', async (t) => {
  const portal = await startTestPortal({ adminApi: false, config: { adminApi: { allowList: ['10.0.0.0/8'] } } });
  t.after(() => portal.close());

  const response = await rawRequest(`${portal.adminBase}/users`);
  assert.equal(response.status, 403);
});

test('X-Forwarded-For is believed only from a configured trusted proxy', async (t) => {
  const behindProxy = await startTestPortal({
    config: { adminApi: { allowList: ['192.0.2.0/24'], trustedProxyList: ['127.0.0.1/32'] } },
  });
  t.after(() => behindProxy.close());

  // The reverse proxy on 127.0.0.1 forwards a request from an allowed administrator workstation.
  const forwarded = await behindProxy.get('/users', {}, { 'x-forwarded-for': '192.0.2.7' });
  assert.equal(forwarded.status, 200);
  assert.deepEqual(forwarded.json(), { users: [] });
  // The proxy itself (no X-Forwarded-For) is not on the allow-list.
  const direct = await behindProxy.get('/users');
  assert.equal(direct.status, 403);
  // A client outside the allow-list cannot hide behind a forged entry: only the hop the proxy saw counts.
  const forged = await behindProxy.get('/users', {}, { 'x-forwarded-for': '192.0.2.7, 198.51.100.9' });
  assert.equal(forged.status, 403);

  const withoutProxy = await startTestPortal({ config: { adminApi: { allowList: ['192.0.2.0/24'] } } });
  t.after(() => withoutProxy.close());
  // Without a trusted proxy, any client could claim to be 192.0.2.7: the header is ignored.
  const spoofed = await withoutProxy.get('/users', {}, { 'x-forwarded-for': '192.0.2.7' });
  assert.equal(spoofed.status, 403);
  assert.equal(errorBody(spoofed.text), 'source address not allowed');
});

test('authentication comes before routing: unauthenticated requests to unknown paths or wrong methods get 401', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const cases: { path: string; method: string }[] = [
    { path: '/no-such-call', method: 'GET' },
    { path: '/users', method: 'DELETE' },
    { path: '/create', method: 'GET' },
    { path: '/../v2/users', method: 'GET' },
  ];
  for (const { path, method } of cases) {
    const response = await rawRequest(`${portal.adminBase}${path}`, { method });
    assert.equal(response.status, 401, `${method} ${path}`);
    assert.equal(response.headers['www-authenticate'], AUTH_CHALLENGE);
  }
  // With the secret the same requests reach the router.
  const unknown = await portal.get('/no-such-call');
  assert.equal(unknown.status, 404);
});

test('no spelling of an Admin API URL skips authentication', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  await portal.post('/create', { user_id: 'alice', profile_id: 'employees' });

  const root = portal.portal.url;
  const spellings = [
    '/vpn-user-portal/admin/ap%69/v1/users', // percent-encoded letter in the prefix
    '/vpn-user-portal/admin/api/v1/user%73', // percent-encoded letter in the call
    '/vpn-user-p%6Frtal/admin/api/v1/users',
    '/vpn-user-portal%2Fadmin/api/v1/users',
    '/vpn-user-portal/admin/api/v1/%zz', // not decodable at all
  ];
  for (const path of spellings) {
    const response = await rawRequest(`${root}${path}`);
    assert.equal(response.status, 401, path);
    assert.doesNotMatch(response.text, /alice/, path);
  }
  // The router does decode the path, so with the secret the encoded spelling is a real call.
  const encoded = await rawRequest(`${root}/vpn-user-portal/admin/ap%69/v1/users`, {
    headers: { authorization: `Bearer ${portal.secret}` },
  });
  assert.equal(encoded.status, 200);
  assert.deepEqual(encoded.json(), { users: ['alice'] });
});
