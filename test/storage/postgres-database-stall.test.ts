// A PostgreSQL server that stops answering — its processes stopped with SIGSTOP, as a frozen
// VM, a stuck storage layer or a dead network path looks to the portal — never holds up the
// Admin API: every call answers 503 JSON within `databaseTimeout` for as long as the server is
// stopped, connections stuck in a query are thrown away instead of being handed out again, and
// once the server runs again the calls succeed by themselves, with nothing half created. The
// server is one of this test's own (test/support/private-postgres.ts): the shared one of
// test/run.sh must keep answering the tests that run beside this one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { privateDatabaseFor } from '../support/private-postgres.js';
import { errorBody } from '../support/raw-http.js';
import { startTestPortal, type ApiResponse, type TestPortal } from '../support/test-portal.js';

const TIMEOUT_MS = 2000;
/** Scheduling on a busy test machine; far below the 20 s a missing bound would show. */
const MARGIN_MS = 2000;
const STOPPED_FOR_MS = 20_000;

interface TimedCall {
  readonly name: string;
  readonly response: ApiResponse;
  readonly elapsedMs: number;
}

/** Reads and writes of every kind, and more at once than the portal has connections (10). */
function callsOf(portal: TestPortal): { readonly name: string; call(): Promise<ApiResponse> }[] {
  const calls = [
    { name: 'create for a new user', call: () => portal.post('/create', { user_id: 'bob', profile_id: 'employees' }) },
    { name: 'create for alice', call: () => portal.post('/create', { user_id: 'alice', profile_id: 'employees' }) },
    { name: 'disable_user', call: () => portal.post('/disable_user', { user_id: 'alice' }) },
    { name: 'destroy', call: () => portal.post('/destroy', { user_id: 'alice' }) },
    { name: 'users', call: () => portal.get('/users') },
    { name: 'connection_list', call: () => portal.get('/connection_list', { show_all: 'on' }) },
    { name: 'user_configuration_list', call: () => portal.get('/user_configuration_list', { user_id: 'alice' }) },
  ];
  const more = Array.from({ length: 5 }, (_, index) => ({
    name: `users #${index + 2}`,
    call: () => portal.get('/users'),
  }));
  return [...calls, ...more];
}

async function timed(name: string, call: () => Promise<ApiResponse>): Promise<TimedCall> {
  const started = performance.now();
  const response = await call();
  return { name, response, elapsedMs: performance.now() - started };
}

test('PostgreSQL: while the server is stopped (SIGSTOP) every call answers 503 within databaseTimeout, and calls work again by themselves once it runs', async (t) => {
  // Undone last first, whatever failed: the server thawed before the portal closes its pool.
  const { server, url, atEnd } = await privateDatabaseFor(t);
  const portal = await startTestPortal({ database: url, config: { databaseTimeout: 'PT2S' } });
  atEnd(() => portal.close());
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);

  server.freeze();
  atEnd(() => server.thaw());
  // The server runs again after STOPPED_FOR_MS whatever the calls do, so a call that hangs
  // fails the test instead of hanging it.
  const thawed = sleep(STOPPED_FOR_MS).then(() => server.thaw());
  const stoppedAt = performance.now();
  let rounds = 0;
  // Rounds of calls for as long as every call of a round is sure to end before the thaw.
  while (performance.now() - stoppedAt < STOPPED_FOR_MS - TIMEOUT_MS - MARGIN_MS) {
    const results = await Promise.all(callsOf(portal).map(({ name, call }) => timed(name, call)));
    for (const { name, response, elapsedMs } of results) {
      assert.equal(response.status, 503, `${name} after ${Math.round(elapsedMs)} ms: ${response.text}`);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/, name);
      assert.equal(errorBody(response.text), 'database unavailable, try again later', name);
      assert.ok(
        elapsedMs <= TIMEOUT_MS + MARGIN_MS,
        `${name} answered after ${Math.round(elapsedMs)} ms, more than ${TIMEOUT_MS} + ${MARGIN_MS} ms`,
      );
    }
    rounds++;
  }
  assert.ok(rounds >= 4, `only ${rounds} rounds of calls while the server was stopped`);

  await thawed;
  const thawedAt = performance.now();
  for (;;) {
    const users = await portal.get('/users');
    if (users.status === 200) break;
    assert.equal(users.status, 503, users.text);
    assert.ok(
      performance.now() - thawedAt < 10_000,
      'the portal did not recover within 10 s of the server running again',
    );
    await sleep(200);
  }
  // Nothing of the refused calls happened: no user bob, alice enabled with her one
  // configuration, and no address taken (bob's configuration gets the one after alice's).
  assert.deepEqual((await portal.get('/users')).json(), { users: ['alice'] });
  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: [] });
  const listed = { user_configuration_list: await portal.admin.userConfigurationList('alice') };
  assert.equal(listed.user_configuration_list.length, 1);
  const created = await portal.post('/create', { user_id: 'bob', profile_id: 'employees' });
  assert.equal(created.status, 200, created.text);
  assert.match(created.text, /^Address = 10\.44\.0\.3\/24,fd44::3\/64$/m);
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  assert.equal((await portal.post('/destroy', { user_id: 'alice' })).status, 204);
  assert.deepEqual((await portal.get('/users')).json(), { users: ['bob'] });
});
