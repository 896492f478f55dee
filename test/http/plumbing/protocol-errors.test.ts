// What the portal's HTTP server itself answers, below the Admin API's routes: requests Node's
// HTTP parser objects to (no Host, an unknown Expect, CONNECT, oversized headers) get JSON
// errors like every other error, and junk sent behind a valid request on the same connection
// never hides that request's answer: whatever the client is told matches what was stored.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { capturedLog } from '../../support/captured-log.js';
import { errorBody, socketExchange, type SocketExchange, type WireResponse } from '../../support/raw-http.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

const WIREGUARD = 'application/x-wireguard-profile';

function targetOf(portal: TestPortal): { host: string; port: number } {
  const url = new URL(portal.portal.url);
  return { host: url.hostname, port: Number(url.port) };
}

/** The Admin API path of `call`, as written on the request line. */
function pathOf(portal: TestPortal, call: string): string {
  return `${new URL(portal.adminBase).pathname}${call}`;
}

/** The error message of a JSON `{"error": ...}` answer; fails on any other shape. */
function jsonError(response: WireResponse | undefined, what: string): string {
  assert.ok(response !== undefined, `${what}: an answer`);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json(;|$)/, `${what}: JSON`);
  return errorBody(response.body);
}

function describe(exchange: SocketExchange): string {
  return JSON.stringify(exchange.received.slice(0, 600));
}

/** Configurations of `userId`; a user that was never made has none. */
async function configurationCount(portal: TestPortal, userId: string): Promise<number> {
  const response = await portal.get('/user_configuration_list', { user_id: userId });
  if (response.status === 400 && errorBody(response.text) === 'user does not exist') return 0;
  assert.equal(response.status, 200);
  return (response.json() as { user_configuration_list: unknown[] }).user_configuration_list.length;
}

test('a create followed by junk on the same connection is answered before the junk is refused, and what the client is told matches what was stored', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const target = targetOf(portal);

  const exchanges: SocketExchange[] = [];
  for (let attempt = 0; attempt < 20; attempt++) {
    const body = `user_id=junk-${attempt}&profile_id=employees`;
    const request =
      `POST ${pathOf(portal, '/create')} HTTP/1.1\r\nHost: portal\r\nAuthorization: Bearer ${portal.secret}\r\nAccept: ${WIREGUARD}\r\n` +
      `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    // One write: the junk arrives while the create is still running.
    exchanges.push(await socketExchange(target, `${request}GET\r\n\r\n`));
  }
  // A create cut off from its client could still commit after the connection closed; give it
  // time to, so that "nothing was stored" below means nothing will be.
  await sleep(1_000);

  for (const [attempt, exchange] of exchanges.entries()) {
    assert.ok(exchange.closedByServer, `attempt ${attempt}: the portal closes the connection after the junk`);
    const stored = await configurationCount(portal, `junk-${attempt}`);
    const [first, second] = exchange.responses;
    assert.ok(first !== undefined, `attempt ${attempt}: an answer, got ${describe(exchange)}`);

    if (first.status === 200) {
      assert.equal(first.headers.get('content-type'), WIREGUARD, `attempt ${attempt}: the file`);
      assert.ok(
        (parseWireGuardFile(first.body).interface.get('PrivateKey') ?? '').length === 44,
        `attempt ${attempt}: the file holds the private key`,
      );
      assert.equal(stored, 1, `attempt ${attempt}: the client has the file, so the configuration exists`);
    } else {
      jsonError(first, `attempt ${attempt}`);
      assert.equal(
        stored,
        0,
        `attempt ${attempt}: the client was refused (${first.status}), so nothing may be stored: got ${describe(exchange)}`,
      );
    }
    // The junk is refused after the create's answer, never instead of it.
    assert.equal(first.status, 200, `attempt ${attempt}: the create is answered first, got ${describe(exchange)}`);
    assert.equal(second?.status, 400, `attempt ${attempt}: then the junk is refused`);
    assert.equal(jsonError(second, `attempt ${attempt}: the junk`), 'malformed HTTP request');
  }
  const users = { users: await portal.admin.users() };
  assert.equal(users.users.length, 20, 'every create that was answered 200 made its user');
});

test('a client that hangs up halfway through its body is no database outage: nothing is logged as a failure and nothing is stored', async (t) => {
  const log = capturedLog('info');
  const portal = await startTestPortal({ logger: log.logger });
  t.after(() => portal.close());
  const target = targetOf(portal);

  for (let attempt = 0; attempt < 5; attempt++) {
    const body = `user_id=gone-${attempt}&profile_id=employees`;
    const socket = connect(target);
    socket.on('error', () => {});
    await once(socket, 'connect');
    socket.write(
      `POST ${pathOf(portal, '/create')} HTTP/1.1\r\nHost: portal\r\nAuthorization: Bearer ${portal.secret}\r\n` +
        `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length + 100}\r\n\r\n${body}`,
    );
    // The portal is reading the body when the client goes.
    await sleep(100);
    socket.resetAndDestroy();
  }
  await sleep(500);

  const failures = log.lines().filter((line) => line.level >= 50);
  assert.deepEqual(failures, [], 'a client going away is not logged as the portal failing');
  assert.equal(await configurationCount(portal, 'gone-0'), 0);
});

test('an HTTP/1.1 request without Host answers 400 JSON; HTTP/1.0 needs none', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const target = targetOf(portal);
  const auth = `Authorization: Bearer ${portal.secret}\r\n`;

  const withoutHost = await socketExchange(target, `GET ${pathOf(portal, '/users')} HTTP/1.1\r\n${auth}\r\n`);
  assert.equal(withoutHost.responses[0]?.status, 400, describe(withoutHost));
  assert.equal(jsonError(withoutHost.responses[0], 'no Host'), 'HTTP/1.1 request without "Host" header');
  assert.ok(withoutHost.closedByServer, 'the connection is closed after the refusal');

  // Also before authentication: the request is malformed whoever sends it.
  const anonymous = await socketExchange(target, `GET ${pathOf(portal, '/users')} HTTP/1.1\r\n\r\n`);
  assert.equal(anonymous.responses[0]?.status, 400, describe(anonymous));
  jsonError(anonymous.responses[0], 'no Host, no token');

  const http10 = await socketExchange(target, `GET ${pathOf(portal, '/users')} HTTP/1.0\r\n${auth}\r\n`);
  assert.equal(http10.responses[0]?.status, 200, describe(http10));
  assert.deepEqual(JSON.parse(http10.responses[0]?.body ?? ''), { users: [] });
});

test('an Expect other than 100-continue answers 417 JSON and creates nothing; 100-continue works', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const target = targetOf(portal);
  const body = 'user_id=alice&profile_id=employees';
  const create = (expect: string): string =>
    `POST ${pathOf(portal, '/create')} HTTP/1.1\r\nHost: portal\r\nAuthorization: Bearer ${portal.secret}\r\nAccept: ${WIREGUARD}\r\n` +
    `Expect: ${expect}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;

  const unknown = await socketExchange(target, create('200-ok'));
  assert.equal(unknown.responses[0]?.status, 417, describe(unknown));
  assert.equal(
    jsonError(unknown.responses[0], 'Expect: 200-ok'),
    'cannot meet "Expect: 200-ok"; only "100-continue" is supported',
  );
  assert.equal(await configurationCount(portal, 'alice'), 0, 'the refused create stored nothing');

  const continued = await socketExchange(target, create('100-continue'));
  assert.deepEqual(
    continued.responses.map((response) => response.status),
    [100, 200],
    describe(continued),
  );
  assert.equal(await configurationCount(portal, 'alice'), 1);
});

test('CONNECT answers 501 JSON instead of a silently closed connection', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const exchange = await socketExchange(
    targetOf(portal),
    'CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n',
  );
  assert.equal(exchange.responses[0]?.status, 501, describe(exchange));
  assert.equal(jsonError(exchange.responses[0], 'CONNECT'), 'CONNECT is not supported: the portal is not a proxy');
  assert.ok(exchange.closedByServer);
});

test('headers over 16 KiB answer 431 JSON', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());

  const exchange = await socketExchange(
    targetOf(portal),
    `GET ${pathOf(portal, '/users')} HTTP/1.1\r\nHost: portal\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`,
  );
  assert.equal(exchange.responses[0]?.status, 431, describe(exchange));
  assert.equal(jsonError(exchange.responses[0], 'huge headers'), 'request headers too large');
});
