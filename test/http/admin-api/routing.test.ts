// What an authenticated administrator sees when a request does not fit a call: unknown paths,
// wrong methods, bodies that are not forms, oversized bodies — always JSON {"error": "..."} —
// and the OpenAPI document that describes every call.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorBody, rawRequest, type RawResponse } from '../../support/raw-http.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

/** The eleven calls of the specification (§4) with their methods and parameters. */
const CALLS = [
  { method: 'GET', path: '/connected_users', params: ['show_all'] },
  { method: 'GET', path: '/connection_list', params: ['show_all'] },
  { method: 'GET', path: '/users', params: ['prefix', 'limit', 'cursor'] },
  { method: 'GET', path: '/disabled_users', params: ['prefix', 'limit', 'cursor'] },
  { method: 'GET', path: '/user_configuration_list', params: ['user_id'] },
  {
    method: 'POST',
    path: '/create',
    params: [
      'user_id',
      'profile_id',
      'display_name',
      'prefer_tcp',
      'expires_in',
      'public_key',
      'csr',
      'device_id',
      'serial',
      'mdm_id',
      'platform',
      'on_demand',
    ],
  },
  { method: 'POST', path: '/destroy', params: ['user_id'] },
  { method: 'POST', path: '/disable_user', params: ['user_id'] },
  { method: 'POST', path: '/enable_user', params: ['user_id'] },
  { method: 'POST', path: '/delete_connection', params: ['user_id', 'connection_id'] },
  { method: 'POST', path: '/delete_user_authorizations', params: ['user_id'] },
] as const;

/** This portal's own calls, documented as extensions. */
const EXTENSIONS = [
  {
    method: 'GET',
    path: '/connection_log',
    params: [
      'user_id',
      'profile_id',
      'connection_id',
      'since',
      'until',
      'open',
      'ip',
      'at',
      // Refused (400), and named so that a NAT address's port is not silently dropped.
      'port',
      'limit',
      'cursor',
      'reason',
    ],
  },
  { method: 'GET', path: '/attribution', params: ['ip', 'port', 'at', 'reason'] },
  { method: 'GET', path: '/stats', params: ['profile_id', 'since', 'until'] },
  { method: 'GET', path: '/profiles', params: [] },
  { method: 'GET', path: '/audit_log', params: ['since', 'until', 'key', 'user_id', 'cursor', 'limit'] },
  { method: 'POST', path: '/extend', params: ['user_id', 'connection_id', 'expires_in'] },
  { method: 'GET', path: '/webhooks', params: [] },
  { method: 'POST', path: '/create_webhook', params: ['url', 'event_types', 'description'] },
  { method: 'POST', path: '/delete_webhook', params: ['webhook_id'] },
  { method: 'POST', path: '/rotate_webhook_secret', params: ['webhook_id', 'overlap'] },
  { method: 'POST', path: '/test_webhook', params: ['webhook_id'] },
  {
    method: 'GET',
    path: '/webhook_deliveries',
    params: ['webhook_id', 'event_type', 'event_id', 'state', 'since', 'until', 'cursor', 'limit'],
  },
  {
    method: 'POST',
    path: '/enrollment_token',
    params: [
      'user_id',
      'profile_id',
      'display_name',
      'expires_in',
      'uses',
      'valid_for',
      'device_id',
      'serial',
      'mdm_id',
      'platform',
    ],
  },
  { method: 'GET', path: '/enrollment_tokens', params: ['user_id'] },
  { method: 'POST', path: '/revoke_enrollment_token', params: ['user_id', 'token_id'] },
  { method: 'GET', path: '/revocation', params: ['revocation_id'] },
  { method: 'GET', path: '/revocations', params: ['state', 'user_id', 'limit'] },
  { method: 'POST', path: '/register_device', params: ['user_id', 'profile_id', 'platform', 'serial', 'mdm_id'] },
  {
    method: 'GET',
    path: '/devices',
    params: [
      'user_id',
      'profile_id',
      'platform',
      'state',
      'identity',
      'serial',
      'mdm_id',
      'last_seen_before',
      'cursor',
      'limit',
    ],
  },
  { method: 'GET', path: '/device', params: ['device_id'] },
  { method: 'POST', path: '/retire_device', params: ['device_id'] },
  { method: 'POST', path: '/suspend_device', params: ['device_id', 'reason'] },
  { method: 'POST', path: '/resume_device', params: ['device_id'] },
  { method: 'GET', path: '/admin_keys', params: [] },
  { method: 'POST', path: '/create_admin_key', params: ['name', 'scope', 'profiles', 'expires_in', 'allow_list'] },
  { method: 'POST', path: '/revoke_admin_key', params: ['name'] },
  { method: 'POST', path: '/create_legal_hold', params: ['user_id', 'device_id', 'reason', 'until'] },
  { method: 'GET', path: '/legal_holds', params: [] },
  { method: 'POST', path: '/release_legal_hold', params: ['hold_id'] },
] as const;

const REQUIRED: Readonly<Record<string, readonly string[]>> = {
  '/user_configuration_list': ['user_id'],
  '/create': ['user_id', 'profile_id'],
  '/destroy': ['user_id'],
  '/disable_user': ['user_id'],
  '/enable_user': ['user_id'],
  '/delete_connection': ['user_id', 'connection_id'],
  '/delete_user_authorizations': ['user_id'],
  '/extend': ['user_id', 'connection_id'],
  '/attribution': ['ip', 'at'],
  '/create_webhook': ['url', 'event_types'],
  '/delete_webhook': ['webhook_id'],
  '/rotate_webhook_secret': ['webhook_id'],
  '/test_webhook': ['webhook_id'],
  '/enrollment_token': ['user_id', 'profile_id'],
  '/revoke_enrollment_token': ['user_id', 'token_id'],
  '/revocation': ['revocation_id'],
  '/register_device': ['user_id', 'profile_id', 'platform'],
  '/device': ['device_id'],
  '/retire_device': ['device_id'],
  '/suspend_device': ['device_id'],
  '/resume_device': ['device_id'],
  '/create_admin_key': ['name'],
  '/revoke_admin_key': ['name'],
  '/create_legal_hold': ['reason', 'until'],
  '/release_legal_hold': ['hold_id'],
};

function authed(
  portal: TestPortal,
  path: string,
  method: string,
  headers: Record<string, string> = {},
  body?: string | Buffer,
): Promise<RawResponse> {
  return rawRequest(`${portal.adminBase}${path}`, {
    method,
    headers: { authorization: `Bearer ${portal.secret}`, ...headers },
    body,
  });
}

/** The error message, after checking the body is exactly {"error": string} in JSON and carries no stack trace. */
function jsonError(response: RawResponse): string {
  assert.match(response.headers['content-type'] ?? '', /^application\/json(;|$)/);
  const message = errorBody(response.text);
  assert.doesNotMatch(response.text, /\bat .*\.(ts|js):\d+/, 'no stack trace');
  return message;
}

test('an unknown path answers 404 naming the whole path asked for', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const cases: Record<string, string> = {
    '/x': '"/vpn-user-portal/admin/api/v1/x" not found',
    '/users/': '"/vpn-user-portal/admin/api/v1/users/" not found',
    '/Users': '"/vpn-user-portal/admin/api/v1/Users" not found',
    '/create/extra': '"/vpn-user-portal/admin/api/v1/create/extra" not found',
  };
  for (const [path, message] of Object.entries(cases)) {
    const response = await authed(portal, path, 'GET');
    assert.equal(response.status, 404, path);
    assert.equal(jsonError(response), message);
  }
  const exact = await authed(portal, '/x', 'GET');
  assert.equal(exact.text, '{"error":"\\"/vpn-user-portal/admin/api/v1/x\\" not found"}');

  const otherVersion = await rawRequest(`${portal.portal.url}/vpn-user-portal/admin/api/v2/users`, {
    headers: { authorization: `Bearer ${portal.secret}` },
  });
  assert.equal(otherVersion.status, 404);
  assert.equal(jsonError(otherVersion), '"/vpn-user-portal/admin/api/v2/users" not found');
});

test('a wrong method on a known path answers 405 with an Allow header naming the right one', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  for (const call of CALLS) {
    const wrongMethods = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PROPFIND'].filter(
      (method) => method !== call.method,
    );
    for (const method of wrongMethods) {
      const response = await authed(portal, call.path, method);
      assert.equal(response.status, 405, `${method} ${call.path}`);
      assert.equal(response.headers['allow'], call.method, `${method} ${call.path}`);
      if (method !== 'HEAD') assert.equal(jsonError(response), `method "${method}" not allowed`);
      else assert.equal(response.text, '', 'a HEAD answer has no body');
    }
  }
  const openApi = await authed(portal, '/openapi.json', 'POST');
  assert.equal(openApi.status, 405);
  assert.equal(openApi.headers['allow'], 'GET');
});

test('a POST body that is not form-encoded answers 415 and changes nothing', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const bodies: { type: string; body: string }[] = [
    { type: 'application/json', body: JSON.stringify({ user_id: 'alice', profile_id: 'employees' }) },
    {
      type: 'multipart/form-data; boundary=XyZ',
      body: '--XyZ\r\nContent-Disposition: form-data; name="user_id"\r\n\r\nalice\r\n--XyZ--\r\n',
    },
    { type: 'text/plain', body: 'user_id=alice&profile_id=employees' },
  ];
  for (const { type, body } of bodies) {
    const response = await authed(portal, '/create', 'POST', { 'content-type': type }, body);
    assert.equal(response.status, 415, type);
    assert.match(jsonError(response), /application\/x-www-form-urlencoded/);
  }
  const users = await portal.get('/users');
  assert.deepEqual(users.json(), { users: [] });

  // The form type with a charset parameter is a form all the same.
  const form = await authed(
    portal,
    '/create',
    'POST',
    { 'content-type': 'application/x-www-form-urlencoded; charset=UTF-8' },
    'user_id=alice&profile_id=employees',
  );
  assert.equal(form.status, 200);
});

test('an oversized body answers 413, with or without a Content-Length, and changes nothing', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const huge = `user_id=alice&profile_id=employees&display_name=${'x'.repeat(1024 * 1024)}`;
  const declared = await authed(
    portal,
    '/create',
    'POST',
    { 'content-type': 'application/x-www-form-urlencoded' },
    huge,
  );
  assert.equal(declared.status, 413);
  assert.equal(jsonError(declared), 'request body too large');

  const chunked = await authed(
    portal,
    '/create',
    'POST',
    { 'content-type': 'application/x-www-form-urlencoded', 'transfer-encoding': 'chunked' },
    huge,
  );
  assert.equal(chunked.status, 413);

  const users = await portal.get('/users');
  assert.deepEqual(users.json(), { users: [] });
});

test('malformed requests get JSON errors too: an undecodable URL, a lying Content-Length', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const badUrl = await authed(portal, '/%zz', 'GET');
  assert.equal(badUrl.status, 400);
  assert.match(jsonError(badUrl), /invalid URL/);

  const lyingLength = await authed(
    portal,
    '/create',
    'POST',
    { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '3' },
    'user_id=alice&profile_id=employees',
  );
  assert.equal(lyingLength.status, 400);
  jsonError(lyingLength);
});

test('every error of every call is JSON {"error": string} without a stack trace', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  for (const call of CALLS) {
    // No parameters at all: required ones are reported missing, the rest succeed.
    const response = await authed(
      portal,
      call.path,
      call.method,
      call.method === 'POST' ? { 'content-type': 'application/x-www-form-urlencoded' } : {},
      call.method === 'POST' ? '' : undefined,
    );
    const required = REQUIRED[call.path];
    if (required === undefined) {
      assert.equal(response.status, 200, call.path);
      continue;
    }
    assert.equal(response.status, 400, call.path);
    const source =
      call.method === 'POST' && call.path !== '/delete_user_authorizations'
        ? 'post'
        : call.method === 'GET'
          ? 'query'
          : null;
    const message = jsonError(response);
    if (source !== null) assert.equal(message, `missing ${source} parameter "${required[0]}"`, call.path);
    else assert.match(message, /^missing (post|query) parameter "user_id"$/, call.path);
  }
});

test('odd input never causes a 5xx: prototype names, NUL bytes, broken percent-encoding, bracketed keys', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);

  const bodies = [
    '__proto__=x&user_id=alice',
    '__proto__[user_id]=x',
    'user_id=__proto__&profile_id=__proto__',
    'user_id=constructor&profile_id=toString&connection_id=hasOwnProperty',
    'user_id=%00&profile_id=employees&display_name=%00',
    'user_id=%E2%82&profile_id=%ZZ',
    '&&&=&==',
    'user_id',
    'user_id=alice&profile_id=employees&expires_in=P99999999999999999999Y',
  ];
  for (const call of CALLS) {
    for (const body of bodies) {
      const response =
        call.method === 'POST'
          ? await authed(portal, call.path, 'POST', { 'content-type': 'application/x-www-form-urlencoded' }, body)
          : await authed(portal, `${call.path}?${body}`, 'GET');
      assert.ok(response.status < 500, `${call.method} ${call.path} ${body}: ${response.status} ${response.text}`);
      if (response.status >= 400) jsonError(response);
    }
  }
  // The portal still answers normally afterwards (destroy with the first body removed alice).
  const users = await portal.get('/users');
  assert.equal(users.status, 200);
  assert.ok(Array.isArray((users.json() as { users: unknown }).users));
});

test('openapi.json is an OpenAPI 3.1 document listing the eleven calls and the extensions with their methods and parameters', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const response = await portal.get('/openapi.json');
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  const document = response.json() as {
    openapi: string;
    servers: { url: string }[];
    paths: Record<string, Record<string, OpenApiOperation>>;
  };
  assert.match(document.openapi, /^3\.1\.\d+$/);
  assert.equal(document.servers[0]?.url, 'http://127.0.0.1/vpn-user-portal/admin/api/v1');
  assert.deepEqual(Object.keys(document.paths).sort(), [...CALLS, ...EXTENSIONS].map((call) => call.path).sort());

  for (const call of [...CALLS, ...EXTENSIONS]) {
    const operations = document.paths[call.path] ?? {};
    assert.deepEqual(Object.keys(operations), [call.method.toLowerCase()], call.path);
    const operation = operations[call.method.toLowerCase()] as OpenApiOperation;
    const required = REQUIRED[call.path] ?? [];
    if (call.method === 'GET') {
      const parameters = operation.parameters ?? [];
      assert.deepEqual(
        parameters.map((parameter) => parameter.name),
        [...call.params],
        call.path,
      );
      for (const parameter of parameters) {
        assert.equal(parameter.in, 'query');
        assert.equal(parameter.required, required.includes(parameter.name), `${call.path} ${parameter.name}`);
      }
    } else {
      const schema = operation.requestBody?.content['application/x-www-form-urlencoded']?.schema;
      assert.ok(schema !== undefined, `${call.path} documents a form body`);
      assert.deepEqual(Object.keys(schema.properties), [...call.params], call.path);
      assert.deepEqual([...schema.required].sort(), [...required].sort(), call.path);
    }
    assert.ok(operation.responses['401'] !== undefined, `${call.path} documents 401`);
  }
  const create = document.paths['/create']?.['post'] as OpenApiOperation;
  assert.deepEqual(
    create.requestBody?.content['application/x-www-form-urlencoded']?.schema.properties['prefer_tcp']?.enum,
    ['yes', 'no'],
  );
  assert.ok(create.responses['200']?.content?.['application/x-wireguard-profile'] !== undefined);
  assert.ok(create.responses['404'] !== undefined && create.responses['406'] !== undefined);
  // A retry's 410 names both reasons: what the answer handed out ended, or the answer was not
  // kept across an upgrade.
  assert.match(create.responses['410']?.description ?? '', /revoked.*earlier portal version/s);
  for (const extension of EXTENSIONS) {
    const operation = document.paths[extension.path]?.[extension.method.toLowerCase()] as OpenApiOperation & {
      'x-extension'?: boolean;
      description?: string;
    };
    assert.equal(operation['x-extension'], true, `${extension.path} is marked as an extension`);
    assert.match(operation.description ?? '', /not part of eduVPN's Admin API v1/);
  }
  for (const call of CALLS) {
    const operation = document.paths[call.path]?.[call.method.toLowerCase()] as { 'x-extension'?: boolean } | undefined;
    assert.equal(operation?.['x-extension'], undefined, `${call.path} is eduVPN's`);
  }
  const connected = document.paths['/connected_users']?.['get'] as OpenApiOperation;
  assert.deepEqual(connected.parameters?.[0]?.schema.enum, ['on', 'off']);
});

interface OpenApiOperation {
  parameters?: { name: string; in: string; required: boolean; schema: { enum?: string[] } }[];
  requestBody?: {
    content: Record<string, { schema: { properties: Record<string, { enum?: string[] }>; required: string[] } }>;
  };
  responses: Record<string, { description?: string; content?: Record<string, unknown> } | undefined>;
}
