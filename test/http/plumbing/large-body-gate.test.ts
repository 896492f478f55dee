// The one slot for large bodies must come back whatever the client does: here a client that
// gives up while it waits behind another large body, on a real Fastify server and real sockets.
// Had the slot stayed with it, every later large body would wait out the gate and get 503.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify from 'fastify';
import { addLargeBodyGate } from '../../../src/http/plumbing/large-body-gate.js';

const THRESHOLD = 1_024;

test('a client that gives up while waiting for the large-body slot does not keep it from the next', async (t) => {
  const app = Fastify();
  t.after(() => app.close());
  let holdFirst = (): void => {};
  const firstHeld = new Promise<void>((resolve) => (holdFirst = resolve));
  let releaseFirst = (): void => {};
  const firstReleased = new Promise<void>((resolve) => (releaseFirst = resolve));
  addLargeBodyGate(app, {
    thresholdBytes: THRESHOLD,
    waitMs: 1_000,
    retryAfterSeconds: 1,
    busy: () => Object.assign(new Error('busy'), { statusCode: 503 }),
  });
  app.post('/slow', async () => {
    holdFirst();
    await firstReleased;
    return { ok: 'slow' };
  });
  app.post('/quick', async () => ({ ok: 'quick' }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const large = 'x'.repeat(THRESHOLD * 2);
  const post = (path: string) =>
    fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: large,
    });

  // The first large body holds the slot in its handler.
  const first = post('/slow');
  await firstHeld;
  // A second sends its headers, waits behind it, and goes away before its turn.
  const quitter = connect(port, '127.0.0.1');
  await once(quitter, 'connect');
  quitter.write(
    `POST /quick HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: ${large.length}\r\n\r\n`,
  );
  await sleep(100);
  quitter.destroy();
  await sleep(50);
  // The first ends while the quitter would still be waiting: the slot is handed to it.
  releaseFirst();
  assert.equal((await first).status, 200);
  await sleep(100);

  const later = await post('/quick');
  assert.equal(later.status, 200, 'the slot came back: a later large body is served, not refused');
  assert.deepEqual(await later.json(), { ok: 'quick' });
});
