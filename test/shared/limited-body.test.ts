// Reading an answer against a byte cap, from a real local server that sends far more than the
// cap: the read fails naming the limit, and the connection is dropped near the cap, so the
// bytes the server could write stay near it too.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AnswerTooLargeError, fetchWithin, readResponseWithin } from '../../src/shared/limited-body.js';
import { startEndlessBody } from '../support/endless-body.js';

const MIB = 1024 * 1024;

test('a body over the cap fails with the limit named and the server writes little more than the cap', async (t) => {
  const endless = await startEndlessBody(200 * MIB);
  t.after(() => endless.close());
  const response = await fetch(endless.url);
  await assert.rejects(readResponseWithin(response, 4 * MIB, 'the test server'), (error) => {
    assert.ok(error instanceof AnswerTooLargeError);
    assert.equal(error.message, 'the test server answered more than 4194304 bytes (4 MiB, the limit); reading stopped');
    return true;
  });
  const sent = await endless.closed();
  assert.ok(sent < 4 * MIB + 16 * MIB, `the server wrote ${sent} bytes`);
});

test('a body within the cap is read whole', async (t) => {
  const endless = await startEndlessBody(MIB);
  t.after(() => endless.close());
  const body = await readResponseWithin(await fetch(endless.url), 2 * MIB, 'the test server');
  assert.equal(body.length, MIB);
});

test('fetchWithin hands back a Response whose body fails past the cap, for libraries that read it themselves', async (t) => {
  const endless = await startEndlessBody(200 * MIB);
  t.after(() => endless.close());
  const limited = fetchWithin(MIB, (url) => url);
  const response = await limited(`${endless.url}/document`);
  assert.equal(response.status, 200);
  assert.equal(response.url, `${endless.url}/document`);
  await assert.rejects(response.text(), (error) => {
    const cause = error instanceof AnswerTooLargeError ? error : (error as Error).cause;
    assert.ok(cause instanceof AnswerTooLargeError, String(error));
    return true;
  });
  const sent = await endless.closed();
  assert.ok(sent < MIB + 16 * MIB, `the server wrote ${sent} bytes`);
});
