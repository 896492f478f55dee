// Every listener of the portal has the budgets of the main one, checked here on the mutual-TLS
// enrollment listener (`enrollment.tls`) with real slow sockets: a body dripped byte by byte is
// cut with 408 JSON after listen.requestTimeout, a connection that never starts its TLS
// handshake is closed after it too, and one address holds at most
// listen.maxConnectionsPerAddress connections while another is served as usual.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect as connectTcp, type Socket } from 'node:net';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect as connectTls } from 'node:tls';
import { errorBody, parseResponses } from '../../support/raw-http.js';
import { MdmCa } from '../../support/mdm-ca.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

/** Slow clients come from here; the well-behaved one from 127.0.0.1. */
const ATTACKER = '127.0.0.2';

interface Connection {
  readonly socket: Socket;
  readonly received: () => Buffer;
  readonly closed: Promise<number>;
}

/** Every socket a test opened, destroyed before its portal closes (whose close would wait for them). */
const opened = new Set<Socket>();

function watch(socket: Socket): Connection {
  opened.add(socket);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now())));
  return { socket, received: () => Buffer.concat(chunks), closed };
}

function tlsTarget(portal: TestPortal): { host: string; port: number } {
  const url = new URL(portal.portal.enrollTlsUrl ?? '');
  return { host: url.hostname, port: Number(url.port) };
}

async function mutualTlsPortal(t: TestContext, ca: MdmCa, listen: Record<string, unknown>): Promise<TestPortal> {
  const portal = await startTestPortal({
    config: {
      listen: { host: '127.0.0.1', port: 0, ...listen },
      enrollment: ca.mutualTlsEnrollment({}),
    },
  });
  t.after(async () => {
    for (const socket of opened) socket.destroy();
    opened.clear();
    await portal.close();
  });
  return portal;
}

test('on the mutual-TLS listener a body dripped byte by byte is cut with 408 JSON after listen.requestTimeout, and a connection that never starts its handshake is closed', async (t) => {
  const ca = MdmCa.make();
  t.after(() => ca.remove());
  const portal = await mutualTlsPortal(t, ca, { requestTimeout: 'PT2S' });
  const target = tlsTarget(portal);

  const started = performance.now();
  const tlsSocket = connectTls({ ...target, rejectUnauthorized: false });
  const body = watch(tlsSocket);
  await once(tlsSocket, 'secureConnect');
  tlsSocket.write(
    `POST ${portal.portal.ctx.config.basePath}/enroll HTTP/1.1\r\nHost: portal\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 60000\r\n\r\npublic_key=`,
  );
  const silentSocket = connectTcp(target);
  const silent = watch(silentSocket);
  await once(silentSocket, 'connect');
  const drip = setInterval(() => body.socket.write('a'), 200);
  const stopDrip = () => clearInterval(drip);
  body.closed.then(stopDrip, stopDrip);
  t.after(stopDrip);

  for (const [what, connection] of Object.entries({ body, silent })) {
    const closedAt = await Promise.race([connection.closed, sleep(10_000).then(() => Number.NaN)]);
    const after = closedAt - started;
    assert.ok(
      after >= 1_900 && after <= 6_000,
      `the ${what} connection is cut after the 2 s timeout, not after ${Math.round(after)} ms`,
    );
  }
  const [answer] = parseResponses(body.received());
  assert.equal(answer?.status, 408, body.received().toString('latin1'));
  assert.equal(errorBody(answer.body), 'request not complete within 2 s');
});

test('on the mutual-TLS listener one address holds at most listen.maxConnectionsPerAddress connections; another is served', async (t) => {
  const ca = MdmCa.make();
  t.after(() => ca.remove());
  const portal = await mutualTlsPortal(t, ca, { maxConnectionsPerAddress: 4 });
  const target = tlsTarget(portal);

  const fromOneHost = await Promise.all(
    Array.from({ length: 30 }, async () => {
      const socket = connectTcp({ ...target, localAddress: ATTACKER });
      const connection = watch(socket);
      await once(socket, 'connect');
      return connection;
    }),
  );
  // The listener closes the excess as each is accepted; on a loaded machine their closes may
  // take a while to arrive. Then what stays open is the budget, no fewer.
  const openNow = () => fromOneHost.filter((connection) => !connection.socket.destroyed).length;
  await until('the connections over the budget to be closed', async () => openNow() <= 4);
  await sleep(500);
  const stillOpen = openNow();
  assert.equal(stillOpen, 4, `${30 - stillOpen} of 30 connections from one host are closed`);

  // Another address gets its TLS handshake and an answer (a JSON refusal: no certificate).
  const other = connectTls({ ...target, rejectUnauthorized: false });
  const answer = watch(other);
  await once(other, 'secureConnect');
  other.write(
    `POST ${portal.portal.ctx.config.basePath}/enroll HTTP/1.1\r\nHost: portal\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
  );
  await answer.closed;
  assert.equal(parseResponses(answer.received())[0]?.status, 403, answer.received().toString('latin1'));
});
