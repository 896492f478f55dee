// Deeply nested bodies on every surface: a JSON body nesting arrays or objects deeper than 64
// levels is a 400 in the surface's own error shape (SCIM's Error schema, the Jamf Pro receiver's
// `{"error"}`), never a 500 from a walk that ran out of stack; the surfaces that take forms (the
// Admin API, the Node API, enrollment, the console) refuse JSON with 415, and read a key such as
// `a[b][c]…` as the one flat key it is, never as nested objects. The server answers afterwards.
// A JSON body that names a member twice in one object is a 400 too, and changes nothing.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import {
  duplicateName,
  MAX_JSON_DEPTH,
  MAX_JSON_VALUES,
  nestsDeeperThan,
  readJsonBody,
  TOO_DEEP,
  TOO_MANY_VALUES,
} from '../../../src/http/plumbing/json-body.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { jsonShapeProblem } from '../../../src/shared/json-shape.js';
import { makeAdminKey } from '../../support/admin-keys.js';
import { BASIC_AUTH, jamfPushOption, secretsFolder } from '../../support/jamf-webhooks.js';
import { errorBody } from '../../support/raw-http.js';
import { patchOp, scimClient, type ScimAnswer } from '../../support/scim-client.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const deepArrays = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const deepObjects = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
/** The deepest bodies of both kinds that fit the 64 KiB body limit, and a few just past the limit. */
const DEEP_BODIES: readonly [string, string][] = [
  ['arrays, 32,000 deep', deepArrays(32_000)],
  ['objects, 10,000 deep', deepObjects(10_000)],
  ['arrays, 65 deep', deepArrays(MAX_JSON_DEPTH + 1)],
  ['objects, 65 deep', deepObjects(MAX_JSON_DEPTH + 1)],
];
const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

test('the depth is counted without parsing: brackets inside strings, escaped quotes included, do not count', () => {
  assert.equal(nestsDeeperThan(deepArrays(64), 64), false);
  assert.equal(nestsDeeperThan(deepArrays(65), 64), true);
  assert.equal(nestsDeeperThan(deepObjects(65), 64), true);
  assert.equal(nestsDeeperThan(`{"a":"${'['.repeat(1000)}"}`, 64), false, 'brackets in a string');
  assert.equal(nestsDeeperThan(`["\\"${'{'.repeat(100)}"]`, 64), false, 'after an escaped quote, still in the string');
  assert.equal(nestsDeeperThan(`["\\\\", ${deepArrays(70)}]`, 64), true, 'an escaped backslash ends before the quote');
  assert.equal(nestsDeeperThan(deepArrays(2_000_000), 64), true, 'two million levels, no stack needed');
  const refuse = (message: string) => new Error(message);
  assert.deepEqual(readJsonBody(`{"a":${deepArrays(63)}}`, refuse), { a: JSON.parse(deepArrays(63)) as unknown });
  assert.throws(() => readJsonBody(deepObjects(65), refuse), { message: TOO_DEEP });
  assert.throws(() => readJsonBody('{"a":', refuse), { message: 'the request body is not JSON' });
});

test("the values are counted without parsing: arrays, objects and commas outside strings; a group of 100,000 members in Okta's form is within the bound", () => {
  const list = (count: number, entry: string) => `[${Array.from({ length: count }, () => entry).join(',')}]`;
  // n entries: the list, n commas less one, and each entry's own arrays and objects.
  assert.equal(jsonShapeProblem(list(MAX_JSON_VALUES / 2, '{}'), 64, MAX_JSON_VALUES), null);
  assert.equal(jsonShapeProblem(list(MAX_JSON_VALUES / 2 + 1, '{}'), 64, MAX_JSON_VALUES), 'too-many-values');
  assert.equal(jsonShapeProblem(list(MAX_JSON_VALUES + 1, '1'), 64, MAX_JSON_VALUES), 'too-many-values');
  assert.equal(jsonShapeProblem(`["${',{['.repeat(MAX_JSON_VALUES)}"]`, 64, MAX_JSON_VALUES), null, 'in a string');
  const members = Array.from({ length: 100_000 }, (_, index) => ({
    value: `6f1c2a5e-0000-4000-8000-${String(index).padStart(12, '0')}`,
    display: `member-${index}@example.org`,
    type: 'User',
    $ref: `https://vpn.example.org/vpn-user-portal/scim/v2/Users/${index}`,
  }));
  assert.equal(jsonShapeProblem(JSON.stringify({ displayName: 'All staff', members }), 64, MAX_JSON_VALUES), null);
  const refuse = (message: string) => new Error(message);
  assert.throws(() => readJsonBody(list(MAX_JSON_VALUES, '[]'), refuse), { message: TOO_MANY_VALUES });
});

/** A SCIM error answer: status, the Error schema, scimType invalidSyntax and the depth named. */
function assertTooDeepScim(answer: ScimAnswer, what: string): void {
  assert.equal(answer.status, 400, `${what}: ${JSON.stringify(answer.body).slice(0, 200)}`);
  assert.equal(answer.contentType, 'application/scim+json; charset=utf-8', what);
  assert.deepEqual(
    answer.body,
    { schemas: [SCIM_ERROR], status: '400', scimType: 'invalidSyntax', detail: TOO_DEEP },
    what,
  );
}

test('a name twice in one object is found, spelled either way; the same name in two objects, or as a value, is not', () => {
  assert.equal(duplicateName('{"active":true,"active":false}'), 'active');
  assert.equal(duplicateName('{"active":true,"\\u0061ctive":false}'), 'active');
  assert.equal(duplicateName('{"a":{"b":1,"c":[{"d":1},{"d":2,"d":3}]}}'), 'd');
  assert.equal(duplicateName('{"a\\"b":1,"a\\u0022b":2}'), 'a"b');
  assert.equal(duplicateName('{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}],"c":"c","d":["d","d"]}'), null);
  assert.equal(duplicateName('{"a":"{\\"a\\":1,\\"a\\":2}"}'), null, 'inside a string');
  assert.equal(duplicateName('[1,"a","a"]'), null);
  const refuse = (message: string) => new Error(message);
  assert.throws(() => readJsonBody('{"userName":"alice","userName":"mallory"}', refuse), {
    message: 'the request body names "userName" twice in one object',
  });
});

test('SCIM: a body naming a member twice in one object is a 400 in SCIM error format, and changes nothing', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const erin = await scim.send('POST', 'Users', { userName: 'erin' });
  const erinId = String(erin.body?.['id']);
  const calls: [string, string, string][] = [
    ['POST', 'Users', '{"userName":"alice","userName":"mallory"}'],
    ['PUT', `Users/${erinId}`, '{"userName":"erin","active":true,"active":false}'],
    [
      'PATCH',
      `Users/${erinId}`,
      '{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":true,"active":false}}]}',
    ],
  ];
  for (const [method, path, body] of calls) {
    const answer = await scim.send(method, path, body);
    assert.equal(answer.status, 400, `${method} ${path}: ${JSON.stringify(answer.body)}`);
    assert.equal(answer.body?.['scimType'], 'invalidSyntax');
    assert.match(String(answer.body?.['detail']), /^the request body names "(userName|active)" twice in one object$/);
  }
  assert.equal((await scim.send('GET', 'Users')).body?.['totalResults'], 1, 'nobody was made');
  assert.equal((await scim.send('GET', `Users/${erinId}`)).body?.['active'], true, 'erin is as she was');
  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: [] });
});

test('SCIM: deep bodies on every call that takes one are a 400 in SCIM error format; the service answers after them', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const erin = await scim.send('POST', 'Users', { userName: 'erin' });
  const erinId = String(erin.body?.['id']);
  const group = await scim.send('POST', 'Groups', { displayName: 'Staff' });
  const groupId = String(group.body?.['id']);
  const user = (value: string) => `{"userName":"mallory","name":${value}}`;
  for (const [name, deep] of DEEP_BODIES) {
    // The whole body, and a deep value where a resource or an operation takes one (they ended in a 500 first).
    const calls: [string, string, string][] = [
      ['POST', 'Users', deep],
      ['POST', 'Users', user(deep)],
      ['PUT', `Users/${erinId}`, user(deep).replace('mallory', 'erin')],
      ['PATCH', `Users/${erinId}`, JSON.stringify(patchOp({ op: 'replace', value: 'DEEP' })).replace('"DEEP"', deep)],
      ['POST', 'Groups', `{"displayName":"x","members":${deep}}`],
      [
        'PATCH',
        `Groups/${groupId}`,
        JSON.stringify(patchOp({ op: 'add', path: 'members', value: 'DEEP' })).replace('"DEEP"', deep),
      ],
    ];
    for (const [method, path, body] of calls) {
      if (Buffer.byteLength(body) > 64 * 1024) continue;
      assertTooDeepScim(await scim.send(method, path, body), `${method} ${path}, ${name}`);
    }
  }
  assert.equal((await scim.send('GET', 'Users')).body?.['totalResults'], 1, 'nothing was made');
  const next = await scim.send('POST', 'Users', { userName: 'frank', name: { givenName: 'Frank' } });
  assert.equal(next.status, 201, 'the service still answers');
});

test('Jamf Pro receiver: deep bodies up to its 1 MiB limit are a 400 {"error"}; it answers after them', async (t) => {
  const folder = secretsFolder();
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  const portal = await startTestPortal({ config: { mdmPush: { jamf: jamfPushOption(folder) } } });
  t.after(() => portal.close());
  const receiver = `${portal.portal.url}${portal.portal.ctx.config.basePath}/mdm/jamf`;
  const event = (value: string) =>
    `{"webhook":{"webhookEvent":"SmartGroupComputerMembershipChange","id":1,"name":"x","eventTimestamp":1},"event":{"groupAddedDevices":${value}}}`;
  for (const [name, deep] of [...DEEP_BODIES, ['arrays, 500,000 deep', deepArrays(500_000)] as const]) {
    for (const body of [deep, event(deep)]) {
      const answer = await fetch(receiver, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...BASIC_AUTH },
        body,
      });
      assert.equal(answer.status, 400, name);
      assert.equal(errorBody(await answer.text()), TOO_DEEP, name);
    }
  }
  const after = await fetch(receiver, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...BASIC_AUTH },
    body: '{}',
  });
  assert.equal(after.status, 400, 'still answers');
  assert.match(errorBody(await after.text()), /not a Jamf Pro webhook/);
});

/** POSTs `body` with `contentType` to `url` and answers its status and `{"error"}` message. */
async function post(portal: TestPortal, url: string, contentType: string, body: string, headers = {}) {
  const answer = await portal.request(url, {
    method: 'POST',
    headers: { 'content-type': contentType, ...headers },
    body,
  });
  return { status: answer.status, error: errorBody(answer.text) };
}

const FORM = 'application/x-www-form-urlencoded';
/** `name[a][a]…=1`, some 60 KB: a qs-style parser would make it 20,000 nested objects. */
const bracketed = (name: string): string => `${name}${'[a]'.repeat(20_000)}=1`;

test('Admin API, Node API, enrollment, console: deep JSON is a 415 and a bracketed form key one flat key, each answered {"error"} (the console with its page)', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const admin = { authorization: `Bearer ${portal.secret}` };
  const base = `${portal.portal.url}${portal.portal.ctx.config.basePath}`;
  const node = {
    authorization: `Bearer ${portal.portal.ctx.keys.nodeSecret(asNodeNumber(0)) ?? ''}`,
    'x-node-number': '0',
  };
  for (const [name, deep] of DEEP_BODIES) {
    for (const [url, headers] of [
      [`${portal.adminBase}/create`, admin],
      [`${portal.nodeApiUrl}/connect`, node],
      [`${base}/enroll`, {}],
    ] as const) {
      const answer = await post(portal, url, 'application/json', deep, headers);
      assert.equal(answer.status, 415, `${url}, ${name}`);
      assert.match(answer.error, /unsupported Content-Type/);
    }
  }
  const form = `${bracketed('user_id')}&profile_id=employees`;
  assert.deepEqual(await post(portal, `${portal.adminBase}/create`, FORM, form, admin), {
    status: 400,
    error: 'value of post parameter "user_id" MUST be string',
  });
  const connect = `${bracketed('profile_id')}&common_name=x&originating_ip=192.0.2.1&ip_four=10.0.0.2&ip_six=fd00::2`;
  assert.equal((await post(portal, `${portal.nodeApiUrl}/connect`, FORM, connect, node)).status, 400);
  assert.equal((await post(portal, `${base}/enroll`, FORM, bracketed('enrollment_token'))).status, 400);
  const query = await portal.get(`/users?${'x[a]'.repeat(1_000)}=1`);
  assert.equal(query.status, 200, 'a bracketed query key is a flat key too, and ignored');
  // The console's sign-in reads `credential`; the bracketed key is another key, so none was presented.
  const signIn = await portal.request(`${base}/admin/sign-in`, {
    method: 'POST',
    headers: { 'content-type': FORM, origin: portal.portal.url },
    body: bracketed('credential'),
  });
  assert.equal(signIn.status, 403);
  // The console answers a browser with its own page, not the API's JSON.
  const consoleJson = await portal.request(`${base}/admin/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: portal.portal.url },
    body: deepObjects(10_000),
  });
  assert.equal(consoleJson.status, 415);
  assert.match(consoleJson.headers.get('content-type') ?? '', /^text\/html/);
  assert.match(consoleJson.text, /unsupported Content-Type/);
  assert.equal(
    (await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status,
    200,
    'answers after',
  );
});
