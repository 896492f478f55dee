// The SCIM surface's rules apart from a provisioning sequence: who may call it (only an admin
// key of scope scim, from an allowed address; refusals audited), every refusal in SCIM's error
// format with its status and scimType and changing nothing, paging by startIndex and count,
// and the discovery resources a client reads first.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditLog, bearer, makeAdminKey, portalState } from '../../support/admin-keys.js';
import { patchOp, resourcesOf, scimClient, type ScimAnswer } from '../../support/scim-client.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

function assertScimError(answer: ScimAnswer, status: number, scimType: string | null, detail: string | RegExp): void {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  assert.equal(answer.contentType, 'application/scim+json; charset=utf-8');
  assert.deepEqual(answer.body?.['schemas'], [ERROR_SCHEMA]);
  assert.equal(answer.body?.['status'], String(status));
  assert.equal(answer.body?.['scimType'], scimType ?? undefined);
  if (typeof detail === 'string') assert.equal(answer.body?.['detail'], detail);
  else assert.match(String(answer.body?.['detail']), detail);
}

async function scimState(portal: TestPortal): Promise<unknown> {
  const db = portal.portal.ctx.db;
  return {
    portal: await portalState(portal),
    scimUsers: await db.selectFrom('scim_users').selectAll().orderBy('scim_id').execute(),
    scimGroups: await db.selectFrom('scim_groups').selectAll().orderBy('scim_id').execute(),
    members: await db.selectFrom('scim_group_members').selectAll().orderBy('group_id').orderBy('member_id').execute(),
  };
}

test('only an admin key of scope scim, from an address both allow-lists allow, may call SCIM; a scim key calls nothing else', async (t) => {
  const portal = await startTestPortal({ config: { scim: { allowList: ['127.0.0.0/8'] } } });
  t.after(() => portal.close());
  const scimKey = await makeAdminKey(portal, 'entra', { scope: 'scim' });
  const elsewhere = await makeAdminKey(portal, 'entra-elsewhere', { scope: 'scim', allowList: ['192.0.2.0/24'] });
  const others = {
    read: await makeAdminKey(portal, 'key-read', { scope: 'read' }),
    write: await makeAdminKey(portal, 'key-write', { scope: 'write' }),
    admin: await makeAdminKey(portal, 'key-admin', { scope: 'admin' }),
  };
  const before = await scimState(portal);

  const nobody = await scimClient(portal, null).send('GET', 'Users');
  assertScimError(nobody, 401, null, 'authentication required: an admin key of scope scim');
  assert.equal(nobody.headers.get('www-authenticate'), 'Bearer realm="SCIM"');
  assertScimError(await scimClient(portal, portal.secret).send('GET', 'Users'), 401, null, /admin key of scope scim/);
  for (const [scope, key] of Object.entries(others)) {
    const refused = await scimClient(portal, key).send('POST', 'Users', { userName: 'mallory' });
    assertScimError(refused, 403, null, `key "key-${scope}" has scope "${scope}"; SCIM needs a key of scope "scim"`);
  }
  assertScimError(
    await scimClient(portal, elsewhere).send('GET', 'Users'),
    403,
    null,
    'source address 127.0.0.1 is not allowed for key "entra-elsewhere"',
  );
  assert.deepEqual(await scimState(portal), before, 'no refused request changed anything');

  // The scim key on the Admin API: refused there, whatever the call.
  const onAdminApi = await portal.get('/users', {}, bearer(scimKey));
  assert.equal(onAdminApi.status, 403);
  assert.match(onAdminApi.text, /key \\"entra\\" has scope \\"scim\\"; users needs scope \\"read\\"/);
  // …and it makes no key with the Admin API either, nor can a key of scope scim be limited to profiles.
  const limited = await portal.post('/create_admin_key', {
    name: 'entra-employees',
    scope: 'scim',
    profiles: 'employees',
  });
  assert.equal(limited.status, 400);
  assert.match(limited.text, /a scim key acts on whole users and cannot be limited to profiles/);

  assert.equal((await scimClient(portal, scimKey).send('GET', 'Users')).status, 200);
  const refusals = (await auditLog(portal))
    .filter((record) => record.call.startsWith('scim '))
    .map((record) => [record.keyName, record.call, record.status]);
  assert.deepEqual(refusals.reverse(), [
    [null, 'scim GET /Users', 401],
    [null, 'scim GET /Users', 401],
    ['key-read', 'scim POST /Users', 403],
    ['key-write', 'scim POST /Users', 403],
    ['key-admin', 'scim POST /Users', 403],
    ['entra-elsewhere', 'scim GET /Users', 403],
  ]);
});

test('a source address outside scim.allowList is refused before its key is looked at', async (t) => {
  const portal = await startTestPortal({ config: { scim: { allowList: ['192.0.2.0/24'] } } });
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  assertScimError(await scim.send('GET', 'ServiceProviderConfig'), 403, null, 'source address not allowed');
});

test('bad requests are answered in SCIM error format with their scimType and change nothing', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const erin = await scim.send('POST', 'Users', { userName: 'erin', externalId: 'e-1' });
  const erinId = String(erin.body?.['id']);
  const group = await scim.send('POST', 'Groups', { displayName: 'Staff', members: [{ value: erinId }] });
  const groupId = String(group.body?.['id']);
  const before = await scimState(portal);

  assertScimError(await scim.send('POST', 'Users', { name: { givenName: 'No' } }), 400, 'invalidValue', /userName/);
  assertScimError(
    await scim.send('POST', 'Users', '{"userName": '),
    400,
    'invalidSyntax',
    'the request body is not JSON',
  );
  assertScimError(await scim.send('POST', 'Users', { userName: 'x', active: 'maybe' }), 400, 'invalidValue', /active/);
  assertScimError(
    await scim.send('POST', 'Users', { userName: 'erin' }),
    409,
    'uniqueness',
    'a User with userName "erin" exists already',
  );
  assertScimError(
    await scim.send('PUT', `Users/${erinId}`, { userName: 'erin2' }),
    400,
    'mutability',
    'userName is the user id on this portal ("erin") and cannot change; delete the user and create it again',
  );
  assertScimError(
    await scim.send('PATCH', `Users/${erinId}`, patchOp({ op: 'move', path: 'active', value: false })),
    400,
    'invalidSyntax',
    /Invalid operation 'move'/,
  );
  assertScimError(
    await scim.send('PATCH', `Users/${erinId}`, { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'] }),
    400,
    'invalidValue',
    'PatchOp: Operations must be a list of at least one operation',
  );
  assertScimError(await scim.send('GET', 'Users/no-such-id'), 404, null, 'no User with id "no-such-id"');
  assertScimError(await scim.send('DELETE', 'Groups/no-such-id'), 404, null, 'no Group with id "no-such-id"');
  assertScimError(
    await scim.send('GET', `Users?filter=${encodeURIComponent('userName sw "e"')}`),
    400,
    'invalidFilter',
    'filter: only userName eq "…" or externalId eq "…" is supported',
  );
  assertScimError(await scim.send('GET', 'Users?filter=userName%20eq'), 400, 'invalidFilter', /^filter: /);
  assertScimError(await scim.send('GET', 'Users?count=many'), 400, 'invalidValue', 'count: a whole number');
  assertScimError(
    await scim.send('POST', 'Groups', { displayName: 'Staff' }),
    409,
    'uniqueness',
    'a Group with displayName "Staff" exists already',
  );
  assertScimError(
    await scim.send('PATCH', `Groups/${groupId}`, patchOp({ op: 'add', path: 'members', value: [{ value: 'ghost' }] })),
    400,
    'invalidValue',
    'members: no User with id "ghost"',
  );
  assertScimError(
    await scim.send('POST', 'Users', { userName: 'frank' }, { 'content-type': 'text/plain' }),
    415,
    null,
    'unsupported Content-Type, send application/scim+json',
  );
  // A form, which the other surfaces take, is no SCIM body either.
  assertScimError(
    await scim.send('POST', 'Users', 'userName=frank', { 'content-type': 'application/x-www-form-urlencoded' }),
    415,
    null,
    'unsupported Content-Type, send application/scim+json',
  );
  assertScimError(await scim.send('GET', 'Bulk'), 404, null, /is not a SCIM endpoint of this portal/);
  // A filter given twice, or whose percent-encoding is no UTF-8, says which.
  assertScimError(
    await scim.send('GET', 'Users?filter=userName%20eq%20%22a%22&filter=userName%20eq%20%22b%22'),
    400,
    'invalidFilter',
    'filter: give it once',
  );
  assertScimError(
    await scim.send('GET', 'Users?filter=userName%20eq%20%22j%F6rg%22'),
    400,
    'invalidFilter',
    'filter: not UTF-8 text',
  );
  // A path the router cannot decode is refused before routing, in SCIM's format too.
  assertScimError(await scim.send('GET', 'Users/%E0%A4%A'), 400, null, /^invalid URL: /);
  assertScimError(await scim.send('DELETE', 'Users/%ED%A0%80'), 400, null, /^invalid URL: /);
  assert.deepEqual(await scimState(portal), before);
});

test('what no directory sends is refused at once and changes nothing: a user of more than 64 KiB, a User body over 128 KiB, a PATCH path of a long filter, a long externalId', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const created = await scim.send('POST', 'Users', { userName: 'alice', active: true });
  const id = String(created.body?.['id']);
  const group = await scim.send('POST', 'Groups', { displayName: 'Staff' });
  const groupId = String(group.body?.['id']);
  const before = await scimState(portal);

  const large = 'x'.repeat(70 * 1024);
  assertScimError(
    await scim.send('POST', 'Users', { userName: 'mallory', displayName: large }),
    400,
    'invalidValue',
    /^the user's attributes take 71,\d{3} bytes; the portal keeps at most 65,536$/,
  );
  assertScimError(
    await scim.send('PATCH', `Users/${id}`, patchOp({ op: 'replace', path: 'displayName', value: large })),
    400,
    'invalidValue',
    /the portal keeps at most 65,536$/,
  );
  const tooLarge = await scim.send('PUT', `Users/${id}`, { userName: 'alice', displayName: 'y'.repeat(129 * 1024) });
  assert.equal(tooLarge.status, 413);
  // The filter parser's time grows faster than a filter (16,000 clauses: a second); refused by
  // its length, a path of 4,000 (within a User's body) takes none.
  const clauses = Array.from({ length: 4_000 }, (_, index) => `value eq "${index}"`).join(' or ');
  for (const [path, target] of [
    [`emails[${clauses}].value`, `Users/${id}`],
    [`members[${clauses}]`, `Groups/${groupId}`],
  ] as const) {
    const started = Date.now();
    const refused = await scim.send('PATCH', target, patchOp({ op: 'remove', path }));
    assertScimError(refused, 400, 'invalidPath', /^path: at most 1,024 characters \(this one has [\d,]+\)$/);
    assert.ok(Date.now() - started < 2_000, `refused after ${Date.now() - started} ms`);
  }
  assertScimError(
    await scim.send('POST', 'Groups', { displayName: 'Board', externalId: 'z'.repeat(1_025) }),
    400,
    'invalidValue',
    'externalId: at most 1,024 characters',
  );
  assert.deepEqual(await scimState(portal), before);

  // A user kept larger before these bounds (its attributes, its externalId) may still be
  // changed as long as it does not grow: its deactivation above all.
  await portal.portal.ctx.db
    .updateTable('scim_users')
    .set({ attributes: JSON.stringify({ displayName: large }), external_id: 'e'.repeat(2_000) })
    .where('scim_id', '=', id)
    .execute();
  const deactivated = await scim.send('PATCH', `Users/${id}`, patchOp({ op: 'replace', path: 'active', value: false }));
  assert.equal(deactivated.status, 200, JSON.stringify(deactivated.body));
  assert.equal(deactivated.body?.['active'], false);
});

test('a userName or displayName of 255 characters is taken, each character counted once as the Admin API counts them', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  // 🙂 is one character, two UTF-16 units: 255 of them are 510 units.
  const smiles = '🙂'.repeat(255);
  const user = await scim.send('POST', 'Users', { userName: smiles });
  assert.equal(user.status, 201, JSON.stringify(user.body));
  assert.equal(user.body?.['userName'], smiles);
  assert.deepEqual((await portal.get('/users')).json(), { users: [smiles] });
  const group = await scim.send('POST', 'Groups', { displayName: smiles });
  assert.equal(group.status, 201, JSON.stringify(group.body));
  assert.equal(group.body?.['displayName'], smiles);

  assertScimError(
    await scim.send('POST', 'Users', { userName: `${smiles}🙂` }),
    400,
    'invalidValue',
    'userName: 1–255 characters, the user id on this portal',
  );
  assertScimError(
    await scim.send('POST', 'Groups', { displayName: `${smiles}🙂` }),
    400,
    'invalidValue',
    'displayName: 1–255 characters',
  );
});

test('lists are paged by startIndex (from 1) and count, in userName order, with the total; a startIndex below 1 is 1, a negative count 0, and a huge one is no error', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'okta', { scope: 'scim' }));
  for (const name of ['uma', 'ivan', 'olga', 'ada', 'eve']) {
    assert.equal((await scim.send('POST', 'Users', { userName: name, externalId: `x-${name}` })).status, 201);
  }
  const page = async (query: string): Promise<[unknown, unknown, unknown, string[]]> => {
    const answer = await scim.send('GET', `Users?${query}`);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const resources = resourcesOf<{ userName: string }>(answer);
    return [
      answer.body?.['totalResults'],
      answer.body?.['startIndex'],
      answer.body?.['itemsPerPage'],
      resources.map((user) => user.userName),
    ];
  };
  assert.deepEqual(await page('startIndex=1&count=2'), [5, 1, 2, ['ada', 'eve']]);
  assert.deepEqual(await page('startIndex=3&count=2'), [5, 3, 2, ['ivan', 'olga']]);
  assert.deepEqual(await page('startIndex=5&count=2'), [5, 5, 1, ['uma']]);
  assert.deepEqual(await page('startIndex=9'), [5, 9, 0, []]);
  assert.deepEqual(await page('count=0'), [5, 1, 0, []]);
  // RFC 7644 §3.4.2.4: a startIndex below 1 is read as 1, a negative count as 0.
  assert.deepEqual(await page('startIndex=-3&count=2'), [5, 1, 2, ['ada', 'eve']]);
  assert.deepEqual(await page('count=-1'), [5, 1, 0, []]);
  // A count or startIndex of any size is a whole number too: a client asking for "everything"
  // gets a full page, one paging past the end an empty list, never a 400 that fails its sync.
  assert.deepEqual(await page('count=2147483647'), [5, 1, 5, ['ada', 'eve', 'ivan', 'olga', 'uma']]);
  assert.deepEqual(await page('count=99999999999999999999'), [5, 1, 5, ['ada', 'eve', 'ivan', 'olga', 'uma']]);
  assert.deepEqual(await page('count=-99999999999999999999'), [5, 1, 0, []]);
  assert.deepEqual(await page('startIndex=-99999999999999999999&count=1'), [5, 1, 1, ['ada']]);
  assert.deepEqual(await page('startIndex=99999999999999999999'), [5, 999_999_999, 0, []]);
  const groups = await scim.send('GET', 'Groups?startIndex=4294967297&count=4294967297');
  assert.equal(groups.status, 200, JSON.stringify(groups.body));
  assert.deepEqual(await page(`filter=${encodeURIComponent('externalId eq "x-olga"')}`), [1, 1, 1, ['olga']]);
  assert.deepEqual(await page(`filter=${encodeURIComponent('USERNAME EQ "eve"')}`), [1, 1, 1, ['eve']]);
});

test('a DELETE sent with a Content-Type and no body, as some clients send every request, deletes the User and the Group', async (t) => {
  const portal = await startTestPortal({ config: { scim: { groupProfiles: { Staff: ['employees'] } } } });
  t.after(() => portal.close());
  const key = await makeAdminKey(portal, 'okta', { scope: 'scim' });
  const scim = scimClient(portal, key);
  const erin = await scim.send('POST', 'Users', { userName: 'erin' });
  const erinId = String(erin.body?.['id']);
  assert.equal((await portal.post('/create', { user_id: 'erin', profile_id: 'employees' })).status, 200);
  const group = await scim.send('POST', 'Groups', { displayName: 'Staff', members: [{ value: erinId }] });
  const groupId = String(group.body?.['id']);
  const bodiless = (path: string, contentType: string) =>
    fetch(`${scim.base}${path}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${key}`, 'content-type': contentType },
    });

  const groupGone = await bodiless(`Groups/${groupId}`, 'application/scim+json');
  assert.equal(groupGone.status, 204, await groupGone.text());
  const userGone = await bodiless(`Users/${erinId}`, 'application/json; charset=utf-8');
  assert.equal(userGone.status, 204, await userGone.text());
  assert.deepEqual(await portal.admin.users(), [], 'erin is destroyed, her configuration with her');
  assert.equal((await scim.send('GET', `Groups/${groupId}`)).status, 404);
  // A change that needs a body still needs one.
  assertScimError(await scim.send('POST', 'Users', ''), 400, 'invalidSyntax', 'the request body is not JSON');
});

test("a filter's value is read as a JSON string: escaped quotes and backslashes find what they name, a malformed escape is invalidFilter", async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'okta', { scope: 'scim' }));
  const externalId = 'CN="Doe, J",OU=Staff\\Leiden';
  const created = await scim.send('POST', 'Users', { userName: 'jdoe', externalId });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const filtered = (filter: string) => scim.send('GET', `Users?filter=${encodeURIComponent(filter)}`);

  const found = await filtered('externalId eq "CN=\\"Doe, J\\",OU=Staff\\\\Leiden"');
  assert.deepEqual(
    resourcesOf<{ userName: string; externalId: string }>(found).map((user) => [user.userName, user.externalId]),
    [['jdoe', externalId]],
  );
  assert.equal((await filtered('userName eq "jd\\u006fe"')).body?.['totalResults'], 1);
  assert.equal((await filtered('externalId eq "CN=\\"Doe, J\\",OU=Staff\\Leiden"')).status, 400);
  assertScimError(await filtered('userName eq "jdoe\\"'), 400, 'invalidFilter', /is not a well-formed string/);
});

test("a filter's attribute may be qualified by the URN of its resource's core schema, in any case; an extension's attribute or a URN of no schema of the resource is invalidFilter", async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  await scim.send('POST', 'Users', { userName: 'kim', externalId: 'k-1' });
  await scim.send('POST', 'Groups', { displayName: 'Staff' });
  const user = 'urn:ietf:params:scim:schemas:core:2.0:User';
  const group = 'urn:ietf:params:scim:schemas:core:2.0:Group';
  const found = async (resource: string, filter: string): Promise<unknown[]> => {
    const answer = await scim.send('GET', `${resource}?filter=${encodeURIComponent(filter)}`);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    return resourcesOf<Record<string, unknown>>(answer).map(
      (resource) => resource['userName'] ?? resource['displayName'],
    );
  };
  assert.deepEqual(await found('Users', `${user}:userName eq "kim"`), ['kim']);
  assert.deepEqual(await found('Users', `${user.toUpperCase()}:EXTERNALID eq "k-1"`), ['kim']);
  assert.deepEqual(await found('Users', `${user}:userName eq "nobody"`), []);
  assert.deepEqual(await found('Groups', `${group}:displayName eq "Staff"`), ['Staff']);

  const refused = (resource: string, filter: string) =>
    scim.send('GET', `${resource}?filter=${encodeURIComponent(filter)}`);
  assertScimError(
    await refused('Users', 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber eq "7"'),
    400,
    'invalidFilter',
    'filter: only userName eq "…" or externalId eq "…" is supported',
  );
  for (const [resource, filter] of [
    ['Users', 'urn:example:params:scim:schemas:core:2.0:User:userName eq "kim"'],
    ['Users', `${group}:displayName eq "Staff"`],
    ['Groups', `${user}:userName eq "kim"`],
    ['Users', `${user} eq "kim"`],
  ] as const)
    assertScimError(
      await refused(resource, filter),
      400,
      'invalidFilter',
      /^filter: the attribute's URN is of no schema of this resource \(/,
    );
});

test('the discovery resources describe what the portal serves', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const config = await scim.send('GET', 'ServiceProviderConfig');
  assert.equal(config.status, 200);
  assert.deepEqual(
    [config.body?.['patch'], config.body?.['bulk'], config.body?.['filter'], config.body?.['etag']],
    [
      { supported: true },
      { supported: false, maxOperations: 0, maxPayloadSize: 0 },
      { supported: true, maxResults: 200 },
      { supported: false },
    ],
  );
  const types = await scim.send('GET', 'ResourceTypes');
  assert.deepEqual(
    resourcesOf<{ id: string; endpoint: string }>(types).map((type) => [type.id, type.endpoint]),
    [
      ['User', '/Users'],
      ['Group', '/Groups'],
    ],
  );
  const schemas = await scim.send('GET', 'Schemas');
  assert.deepEqual(
    resourcesOf<{ id: string }>(schemas).map((schema) => schema.id),
    [
      'urn:ietf:params:scim:schemas:core:2.0:User',
      'urn:ietf:params:scim:schemas:core:2.0:Group',
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
    ],
  );
  assert.deepEqual(resourcesOf<{ schemaExtensions?: unknown }>(types)[0]?.schemaExtensions, [
    { schema: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User', required: false },
  ]);
  const user = await scim.send('GET', 'Schemas/urn:ietf:params:scim:schemas:core:2.0:User');
  assert.equal(user.body?.['name'], 'User');
  assert.equal((await scim.send('GET', 'ResourceTypes/Device')).status, 404);
});
