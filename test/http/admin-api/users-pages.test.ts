// GET /users and GET /disabled_users a page at a time (for the console's user search):
// `prefix` (exact, case-sensitive, no wildcards), `limit` and `cursor`, with `next_cursor` and
// `directory_inactive` (which of the page's users the directory calls inactive) in the answer;
// without them the answer stays the specification's, byte for byte; a bad value is a 400 that
// changes nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bearer, makeAdminKey, portalState, twoProfiles } from '../../support/admin-keys.js';
import { patchOp, scimClient } from '../../support/scim-client.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

/** Ids that trip up a LIKE or a case-insensitive comparison, and multibyte ones. */
const USERS = ['ann', 'anna', 'Anna', 'an%x', 'an_y', 'añez', 'an😀', 'anne', 'bob', 'an'];

async function provision(portal: TestPortal, profileOf: (userId: string) => string = () => 'employees'): Promise<void> {
  for (const userId of USERS) {
    const response = await portal.post('/create', { user_id: userId, profile_id: profileOf(userId) });
    assert.equal(response.status, 200, response.text);
  }
}

type Page = { users?: string[]; disabled_users?: string[]; next_cursor: string | null; directory_inactive: string[] };

async function page(portal: TestPortal, path: string, query: Record<string, string>, key?: string): Promise<Page> {
  const response = await portal.get(path, query, key === undefined ? undefined : bearer(key));
  assert.equal(response.status, 200, response.text);
  return response.json() as Page;
}

test('without prefix, limit or cursor the users answer is the specification’s: the sorted ids alone, no next_cursor', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  await provision(portal);
  const sorted = [...USERS].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const users = await portal.get('/users');
  // The database writes the text (src/storage/users.ts); only its content is the same on both.
  assert.deepEqual(JSON.parse(users.text), { users: sorted });
  assert.doesNotMatch(users.text, /next_cursor/);
  assert.deepEqual(JSON.parse((await portal.get('/disabled_users')).text), { disabled_users: [] });
});

test('prefix finds exactly the ids starting with it, case-sensitive, with % and _ taken literally, in bytewise order', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  await provision(portal);

  assert.deepEqual(await page(portal, '/users', { prefix: 'an' }), {
    users: ['an', 'an%x', 'an_y', 'ann', 'anna', 'anne', 'an😀'],
    next_cursor: null,
    directory_inactive: [],
  });
  assert.deepEqual((await page(portal, '/users', { prefix: 'ann' })).users, ['ann', 'anna', 'anne']);
  assert.deepEqual((await page(portal, '/users', { prefix: 'An' })).users, ['Anna'], 'case-sensitive');
  assert.deepEqual((await page(portal, '/users', { prefix: 'an%' })).users, ['an%x'], '% is no wildcard');
  assert.deepEqual((await page(portal, '/users', { prefix: 'an_' })).users, ['an_y'], '_ is no wildcard');
  assert.deepEqual((await page(portal, '/users', { prefix: 'añ' })).users, ['añez']);
  assert.deepEqual((await page(portal, '/users', { prefix: 'an😀' })).users, ['an😀']);
  assert.deepEqual(await page(portal, '/users', { prefix: 'zed' }), {
    users: [],
    next_cursor: null,
    directory_inactive: [],
  });
});

test('limit and cursor walk every page once, in order, also combined with prefix and for disabled users', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  await provision(portal);
  for (const userId of ['ann', 'anne', 'bob'])
    assert.equal((await portal.post('/disable_user', { user_id: userId })).status, 204);

  const walk = async (path: string, query: Record<string, string>): Promise<string[][]> => {
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const answer: Page = await page(portal, path, { ...query, ...(cursor === null ? {} : { cursor }) });
      pages.push(answer.users ?? answer.disabled_users ?? []);
      cursor = answer.next_cursor;
    } while (cursor !== null);
    return pages;
  };
  assert.deepEqual(await walk('/users', { prefix: 'an', limit: '3' }), [
    ['an', 'an%x', 'an_y'],
    ['ann', 'anna', 'anne'],
    ['an😀'],
  ]);
  assert.deepEqual(await walk('/users', { limit: '4' }), [
    ['Anna', 'an', 'an%x', 'an_y'],
    ['ann', 'anna', 'anne', 'an😀'],
    ['añez', 'bob'],
  ]);
  assert.deepEqual(await walk('/disabled_users', { limit: '2' }), [['ann', 'anne'], ['bob']]);
  assert.deepEqual(await walk('/disabled_users', { prefix: 'an' }), [['ann', 'anne']]);
  const typed = await portal.admin.usersPage({ prefix: 'ann', limit: 2 });
  assert.deepEqual(typed.users, ['ann', 'anna'], 'the typed client reads a page');
  assert.deepEqual((await portal.admin.usersPage({ cursor: typed.next_cursor ?? '', prefix: 'ann' })).users, ['anne']);
});

test('a page may end at an id of 255 characters outside the BMP, and its cursor leads on to the next', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  // 255 characters, as user_id allows, but 510 UTF-16 code units and 1,020 bytes.
  const longest = '😀'.repeat(255);
  for (const userId of ['ann', longest, '😁']) {
    const response = await portal.post('/create', { user_id: userId, profile_id: 'employees' });
    assert.equal(response.status, 200, response.text);
  }
  const first = await page(portal, '/users', { limit: '2' });
  assert.deepEqual(first.users, ['ann', longest]);
  assert.notEqual(first.next_cursor, null);
  const second = await page(portal, '/users', { limit: '2', cursor: first.next_cursor ?? '' });
  assert.deepEqual(second, { users: ['😁'], next_cursor: null, directory_inactive: [] });
});

test('a key limited to a profile pages through the users it may see only', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(() => portal.close());
  await provision(portal, (userId) => (userId.startsWith('ann') ? 'guests' : 'employees'));
  const guestsReader = await makeAdminKey(portal, 'guests-reader', { scope: 'read', profiles: ['guests'] });
  assert.deepEqual(await page(portal, '/users', { prefix: 'an' }, guestsReader), {
    users: ['ann', 'anna', 'anne'],
    next_cursor: null,
    directory_inactive: [],
  });
});

test("a page names those of its users the directory calls inactive, as enable_user refuses them; the specification's answer does not", async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const ids: Record<string, string> = {};
  for (const userName of ['ann', 'anna', 'anne']) {
    const created = await scim.send('POST', 'Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName,
      active: true,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    ids[userName] = String(created.body?.['id']);
  }
  assert.equal((await portal.post('/create', { user_id: 'bob', profile_id: 'employees' })).status, 200);
  // The directory calls ann and anne inactive; an administrator disables bob, whom it does not manage.
  for (const userName of ['ann', 'anne'])
    await scim.send('PATCH', `Users/${ids[userName]}`, patchOp({ op: 'replace', path: 'active', value: false }));
  assert.equal((await portal.post('/disable_user', { user_id: 'bob' })).status, 204);
  assert.equal((await portal.post('/enable_user', { user_id: 'anne' })).status, 409);

  assert.deepEqual(await page(portal, '/users', { limit: '2' }), {
    users: ['ann', 'anna'],
    next_cursor: Buffer.from('anna').toString('base64url'),
    directory_inactive: ['ann'],
  });
  assert.deepEqual(await page(portal, '/disabled_users', { prefix: 'anne', limit: '1' }), {
    disabled_users: ['anne'],
    next_cursor: null,
    directory_inactive: ['anne'],
  });
  assert.deepEqual(await page(portal, '/disabled_users', { prefix: 'b' }), {
    disabled_users: ['bob'],
    next_cursor: null,
    directory_inactive: [],
  });
  const typed = await portal.admin.usersPage({ disabled: true });
  assert.deepEqual(
    [typed.users, typed.directory_inactive],
    [
      ['ann', 'anne', 'bob'],
      ['ann', 'anne'],
    ],
    'the typed client reads it',
  );
  assert.deepEqual(JSON.parse((await portal.get('/disabled_users')).text), { disabled_users: ['ann', 'anne', 'bob'] });
});

test('a bad prefix, limit or cursor is a 400 naming the parameter, and changes nothing', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  await provision(portal);
  const before = await portalState(portal);
  const cases: [string, Record<string, string>, string][] = [
    ['/users', { prefix: '' }, 'invalid value for "prefix"'],
    ['/users', { prefix: 'x'.repeat(256) }, 'invalid value for "prefix"'],
    ['/users', { prefix: 'a\u0000' }, 'invalid value for "prefix"'],
    ['/users', { limit: '0' }, 'invalid value for "limit"'],
    ['/users', { limit: '1001' }, 'invalid value for "limit"'],
    ['/users', { limit: 'ten' }, 'invalid value for "limit"'],
    ['/users', { cursor: 'not a cursor' }, 'invalid value for "cursor"'],
    ['/disabled_users', { cursor: 'AAAA_' }, 'invalid value for "cursor"'],
    // Cursors of ids no user can have: a NUL (which PostgreSQL refuses to compare), or too long.
    ['/users', { cursor: 'AA' }, 'invalid value for "cursor"'],
    ['/disabled_users', { cursor: 'AGE' }, 'invalid value for "cursor"'],
    ['/users', { cursor: Buffer.from('x'.repeat(256)).toString('base64url') }, 'invalid value for "cursor"'],
  ];
  for (const [path, query, message] of cases) {
    const response = await portal.get(path, query);
    assert.equal(response.status, 400, `${path} ${JSON.stringify(query)}`);
    assert.deepEqual(response.json(), { error: message });
  }
  assert.deepEqual(await portalState(portal), before);
});
