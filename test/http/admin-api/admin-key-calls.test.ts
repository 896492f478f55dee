// Admin keys over the Admin API: `admin_keys` lists them without secrets,
// `create_admin_key` makes one by the `admin-key` command's rules and shows its secret in that
// answer only, `revoke_admin_key` revokes a name; a key never makes a key with more scope, more
// profiles, a wider allow-list or a later expiry than its own, nor revokes one beyond its own
// limits; every refusal changes nothing; every change is in the audit log by name, never by secret.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditLog, bearer, makeAdminKey, ManualClock, portalState, twoProfiles } from '../../support/admin-keys.js';
import { startTestPortal, type ApiResponse, type TestPortal } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

interface Listed {
  name: string;
  scope: string;
  profiles: string[] | null;
  allow_list: string[] | null;
  expires_at: string | null;
  revoked_at: string | null;
  state: string;
  last_used_at?: string | null;
}

async function listed(portal: TestPortal, key?: string): Promise<Listed[]> {
  const response = await portal.get('/admin_keys', {}, key === undefined ? undefined : bearer(key));
  assert.equal(response.status, 200, response.text);
  return (response.json() as { admin_keys: Listed[] }).admin_keys;
}

function refused(response: ApiResponse, status: number, message: string): void {
  assert.equal(response.status, status, response.text);
  assert.deepEqual(response.json(), { error: message });
}

test('the secret makes a key of any rights; its secret is in that answer only, the key works, and the list and audit log name it without the secret', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());

  const created = await portal.post('/create_admin_key', {
    name: 'console',
    scope: 'write',
    profiles: 'employees, guests',
    expires_in: 'P30D',
    allow_list: '127.0.0.0/8,2001:db8::/32',
  });
  assert.equal(created.status, 200, created.text);
  const answer = created.json() as { admin_key: Listed & { key_id: string }; secret: string };
  assert.match(answer.secret, /^vpa_/);
  assert.deepEqual(
    { ...answer.admin_key, key_id: undefined },
    {
      key_id: undefined,
      name: 'console',
      scope: 'write',
      profiles: ['employees', 'guests'],
      allow_list: ['127.0.0.0/8', '2001:db8::/32'],
      created_at: '2026-03-02T09:00:00+00:00',
      expires_at: '2026-04-01T09:00:00+00:00',
      last_used_at: null,
      last_used_address: null,
      revoked_at: null,
      state: 'active',
    },
  );
  assert.equal(
    (await portal.post('/create', { user_id: 'alice', profile_id: 'employees' }, bearer(answer.secret))).status,
    200,
    'the new key works',
  );

  const list = await portal.get('/admin_keys');
  assert.deepEqual(
    (list.json() as { admin_keys: Listed[] }).admin_keys.map((key) => [key.name, key.scope, key.state]),
    [['console', 'write', 'active']],
  );
  assert.ok(
    !list.text.includes(answer.secret) && !list.text.includes(answer.secret.slice(-20)),
    'the list holds no secret',
  );
  const stored = await portal.portal.ctx.db.selectFrom('admin_keys').select('secret_hash').executeTakeFirstOrThrow();
  assert.ok(!list.text.includes(stored.secret_hash), 'nor its hash');

  const [row] = (await auditLog(portal)).filter((entry) => entry.call === 'create_admin_key');
  assert.deepEqual(
    [row?.keyName, row?.status, row?.parameters],
    [
      'secret',
      200,
      {
        name: 'console',
        scope: 'write',
        profiles: 'employees, guests',
        expires_in: 'P30D',
        allow_list: '127.0.0.0/8,2001:db8::/32',
      },
    ],
  );
  assert.ok(!JSON.stringify(await auditLog(portal)).includes(answer.secret.slice(4)), 'no audit row holds the secret');
  const client = await portal.admin.adminKeys();
  assert.deepEqual(
    client.map((key) => key.name),
    ['console'],
    'the typed client reads the list',
  );
});

test('create_admin_key refuses what the admin-key command refuses, with a 400 or 409 naming the parameter, and stores nothing', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(() => portal.close());
  assert.equal((await portal.post('/create_admin_key', { name: 'taken' })).status, 200);
  const before = await portalState(portal);
  const cases: [Record<string, string>, number, string][] = [
    [{}, 400, 'missing post parameter "name"'],
    [{ name: '-dash' }, 400, 'invalid value for "name"'],
    [
      { name: 'secret' },
      400,
      `invalid value for "name": "secret" names the specification's secret in the audit log; choose another name`,
    ],
    [{ name: 'k', scope: 'root' }, 400, 'invalid value for "scope"'],
    [
      { name: 'k', profiles: 'employees,staff' },
      400,
      'invalid value for "profiles": there is no profile "staff" (profiles: employees, guests)',
    ],
    [
      { name: 'k', expires_in: '30d' },
      400,
      'invalid value for "expires_in": "30d" is not an ISO 8601 duration such as P30D',
    ],
    [
      { name: 'k', allow_list: '10.0.0.0/8,10.1.2.3/33' },
      400,
      'invalid value for "allow_list": "10.1.2.3/33" is not an IP prefix such as 192.0.2.0/24 or 2001:db8::/32',
    ],
    [{ name: 'taken' }, 409, 'a key named "taken" exists already: revoke it first, or choose another name'],
  ];
  for (const [form, status, message] of cases) refused(await portal.post('/create_admin_key', form), status, message);
  assert.deepEqual(await portalState(portal), before);
});

test('a key cannot make a key with more scope, more profiles, a wider allow-list or a later expiry than its own; each refusal stores nothing and is audited', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());
  const writer = await makeAdminKey(portal, 'writer', { scope: 'write' });
  const limited = await makeAdminKey(portal, 'limited', {
    scope: 'admin',
    profiles: ['employees'],
    allowList: ['127.0.0.0/8'],
    expiresIn: 'P7D',
  });
  const within = { profiles: 'employees', allow_list: '127.0.0.1/32', expires_in: 'P1D' };
  const before = await portalState(portal);

  const cases: [string, Record<string, string>, string][] = [
    [writer, { name: 'k', scope: 'read' }, 'key "writer" has scope "write"; create_admin_key needs scope "admin"'],
    [
      limited,
      { name: 'k', allow_list: '127.0.0.1/32', expires_in: 'P1D' },
      'key "limited" may not make key "k": every profile is more than its own profiles (employees)',
    ],
    [
      limited,
      { ...within, name: 'k', profiles: 'employees,guests' },
      'key "limited" may not make key "k": profiles guests are outside its own (employees)',
    ],
    [
      limited,
      { name: 'k', profiles: 'employees', expires_in: 'P1D' },
      'key "limited" may not make key "k": use from anywhere in adminApi.allowList is wider than its own allow-list (127.0.0.0/8)',
    ],
    [
      limited,
      { ...within, name: 'k', allow_list: '127.0.0.0/7' },
      'key "limited" may not make key "k": allow-list 127.0.0.0/7 is wider than its own (127.0.0.0/8)',
    ],
    [
      limited,
      { ...within, name: 'k', expires_in: 'P8D' },
      'key "limited" may not make key "k": it would outlive the calling key, which expires at 2026-03-09T09:00:00+00:00 (give a shorter expires_in)',
    ],
    [
      limited,
      { name: 'k', profiles: 'employees', allow_list: '127.0.0.1/32' },
      'key "limited" may not make key "k": it would outlive the calling key, which expires at 2026-03-09T09:00:00+00:00 (give a shorter expires_in)',
    ],
  ];
  for (const [key, form, message] of cases) {
    const response = await portal.post('/create_admin_key', form, bearer(key));
    refused(response, 403, message);
    const [newest] = await auditLog(portal, 1);
    assert.deepEqual([newest?.call, newest?.status, newest?.detail], ['create_admin_key', 403, message]);
  }
  assert.deepEqual(await portalState(portal), before, 'no key was stored');

  const made = await portal.post('/create_admin_key', { ...within, name: 'k', scope: 'admin' }, bearer(limited));
  assert.equal(made.status, 200, `within its own limits it may: ${made.text}`);
  assert.equal((made.json() as { admin_key: Listed }).admin_key.expires_at, '2026-03-03T09:00:00+00:00');
});

test('revoke_admin_key revokes a name at once; a key revokes only keys within its own limits, itself included', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(() => portal.close());
  const broad = await makeAdminKey(portal, 'broad', { scope: 'admin' });
  const limited = await makeAdminKey(portal, 'limited', { scope: 'admin', profiles: ['employees'] });
  await makeAdminKey(portal, 'guests-reader', { scope: 'read', profiles: ['guests'] });
  const narrow = await makeAdminKey(portal, 'narrow', { scope: 'read', profiles: ['employees'] });
  const before = await portalState(portal);

  refused(
    await portal.post('/revoke_admin_key', { name: 'broad' }, bearer(limited)),
    403,
    'key "limited" may not revoke key "broad": every profile is more than its own profiles (employees)',
  );
  refused(
    await portal.post('/revoke_admin_key', { name: 'guests-reader' }, bearer(limited)),
    403,
    'key "limited" may not revoke key "guests-reader": profiles guests are outside its own (employees)',
  );
  refused(
    await portal.post('/revoke_admin_key', { name: 'nobody' }, bearer(broad)),
    404,
    'there is no key named "nobody" that is not revoked already',
  );
  refused(await portal.post('/revoke_admin_key', { name: 'no such name!' }), 400, 'invalid value for "name"');
  assert.deepEqual(await portalState(portal), before, 'the refusals revoked nothing');

  const revoked = await portal.post('/revoke_admin_key', { name: 'narrow' }, bearer(limited));
  assert.deepEqual([revoked.status, revoked.json()], [200, { name: 'narrow', revoked: 1 }]);
  assert.equal((await portal.get('/users', {}, bearer(narrow))).status, 401, 'the revoked key is refused at once');
  assert.equal((await listed(portal)).find((key) => key.name === 'narrow')?.state, 'revoked');
  refused(
    await portal.post('/revoke_admin_key', { name: 'narrow' }, bearer(limited)),
    404,
    'there is no key named "narrow" that is not revoked already',
  );

  assert.equal(
    (await portal.post('/revoke_admin_key', { name: 'limited' }, bearer(limited))).status,
    200,
    'a key may revoke itself',
  );
  assert.equal((await portal.get('/users', {}, bearer(limited))).status, 401);
  assert.equal(await portal.admin.revokeAdminKey('broad'), 1, 'the secret revokes any key');
  const rows = (await auditLog(portal)).filter((row) => row.call === 'revoke_admin_key' && row.status === 200);
  assert.deepEqual(
    rows.map((row) => [row.keyName, row.parameters['name']]),
    [
      ['secret', 'broad'],
      ['limited', 'limited'],
      ['limited', 'narrow'],
    ],
  );
});

test('a key limited to some profiles lists every key, but when and from where a key was last used only for keys it could revoke', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(() => portal.close());
  const broad = await makeAdminKey(portal, 'broad', { scope: 'admin' });
  const limited = await makeAdminKey(portal, 'limited', { scope: 'admin', profiles: ['employees'] });
  const narrow = await makeAdminKey(portal, 'narrow', { scope: 'read', profiles: ['employees'] });
  for (const key of [broad, narrow]) assert.equal((await portal.get('/users', {}, bearer(key))).status, 200);

  type Used = { name: string; last_used_at: string | null; last_used_address: string | null };
  const used = async (key?: string) =>
    new Map(
      ((await listed(portal, key)) as unknown as Used[]).map((row) => [
        row.name,
        [row.last_used_at !== null, row.last_used_address],
      ]),
    );
  // "Last used" is written behind the call that used the key.
  await until('the uses of narrow and broad recorded', async () => {
    const seen = await used(broad);
    return seen.get('narrow')?.[0] === true && seen.get('broad')?.[0] === true;
  });
  assert.deepEqual(
    await used(broad),
    new Map([
      ['narrow', [true, '127.0.0.1']],
      ['limited', [false, null]],
      ['broad', [true, '127.0.0.1']],
    ]),
  );
  // The limited key sees the broad key's rights, not its administrator's address or hours.
  await until('the limited key’s own use recorded', async () => (await used(limited)).get('limited')?.[0] === true);
  const seenByLimited = await used(limited);
  assert.deepEqual(seenByLimited.get('broad'), [false, null]);
  assert.deepEqual(seenByLimited.get('narrow'), [true, '127.0.0.1']);
  assert.deepEqual(seenByLimited.get('limited'), [true, '127.0.0.1'], 'its own use, as it is within its limits');
});

test('a key used after the wall clock was set back shows that use, not the one dated ahead, and one use a minute is written', async (t) => {
  const clock = new ManualClock('2026-03-02T09:00:00Z');
  // The minute between two writes passes on the monotonic clock: real time, plus what the story lets pass.
  const realNow = performance.now.bind(performance);
  let passed = 0;
  t.mock.method(performance, 'now', () => realNow() + passed);
  const portal = await startTestPortal({ config: twoProfiles, clock });
  t.after(() => portal.close());
  const key = await makeAdminKey(portal, 'ops', { scope: 'read' });
  const lastUsed = async (): Promise<string | null> =>
    (await listed(portal)).find((row) => row.name === 'ops')?.last_used_at ?? null;

  assert.equal((await portal.get('/users', {}, bearer(key))).status, 200);
  await until('the first use recorded', async () => (await lastUsed()) === '2026-03-02T09:00:00+00:00');

  // Someone sets the clock back an hour; within the minute the key's use is not written again.
  clock.advance(-3_600_000);
  assert.equal((await portal.get('/users', {}, bearer(key))).status, 200);
  await portal.get('/users', {}, bearer(key));
  assert.equal(await lastUsed(), '2026-03-02T09:00:00+00:00', 'one write a minute');

  passed += 61_000;
  assert.equal((await portal.get('/users', {}, bearer(key))).status, 200);
  await until(
    'the use after the minute recorded at the clock’s time',
    async () => (await lastUsed()) === '2026-03-02T08:00:00+00:00',
  );
});

test('create_admin_key with an Idempotency-Key makes one key; the retry gets the same answer and a read or write key gets none', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(() => portal.close());
  const headers = { 'idempotency-key': 'make-ci-key-1' };
  const first = await portal.post('/create_admin_key', { name: 'ci', scope: 'read' }, headers);
  const again = await portal.post('/create_admin_key', { name: 'ci', scope: 'read' }, headers);
  assert.equal(first.status, 200, first.text);
  assert.equal(again.text, first.text, 'the same answer, not a 409 and not a second key');
  assert.deepEqual(
    (await listed(portal)).map((key) => key.name),
    ['ci'],
  );
  const made = await portal.admin.createAdminKey({ name: 'typed', scope: 'read' });
  const reader = made.secret;
  refused(
    await portal.get('/admin_keys', {}, bearer(reader)),
    403,
    'key "typed" has scope "read"; admin_keys needs scope "admin"',
  );
});
