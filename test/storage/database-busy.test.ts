// When another process holds the SQLite database's write lock for longer than the portal's
// `databaseTimeout` (a maintenance script, a backup tool), every call that writes answers 503
// JSON — "try again later", not a 500 — after waiting exactly that long (the busy timeout is the
// configured one), reads are served meanwhile (WAL), nothing is left half done, and once the
// lock is gone the same calls succeed. SQLite only, on both passes of test/run.sh: the file
// lock of another process is SQLite's own way of being busy.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorBody } from '../support/raw-http.js';
import { holdWriteLock } from '../support/sqlite-write-lock.js';
import { startTestPortal, type ApiResponse } from '../support/test-portal.js';

const TIMEOUT_MS = 1000;
/** Scheduling on a busy test machine; far below the wait a missing bound would show. */
const MARGIN_MS = 1500;

async function timed(
  call: () => Promise<ApiResponse>,
): Promise<{ readonly response: ApiResponse; readonly elapsedMs: number }> {
  const started = performance.now();
  const response = await call();
  return { response, elapsedMs: performance.now() - started };
}

test('SQLite only: a write blocked by another process answers 503 after databaseTimeout and leaves nothing behind', async (t) => {
  const portal = await startTestPortal({ database: 'sqlite', config: { databaseTimeout: 'PT1S' } });
  t.after(() => portal.close());
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);

  const location = portal.portal.ctx.config.database;
  assert.ok(location.dialect === 'sqlite', `the portal runs on SQLite, not ${location.dialect}`);
  const lock = await holdWriteLock(location.path);
  t.after(() => lock.child.kill('SIGKILL'));

  for (const [path, form] of [
    ['/create', { user_id: 'bob', profile_id: 'employees' }],
    ['/create', { user_id: 'alice', profile_id: 'employees' }],
    ['/disable_user', { user_id: 'alice' }],
    ['/destroy', { user_id: 'alice' }],
  ] as const) {
    const { response, elapsedMs } = await timed(() => portal.post(path, form));
    assert.equal(response.status, 503, `${path} ${JSON.stringify(form)}: ${response.text}`);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(errorBody(response.text), 'database unavailable, try again later');
    assert.equal(response.headers.get('retry-after'), '5', 'a busy database is usually free again in moments');
    assert.ok(
      elapsedMs >= TIMEOUT_MS * 0.9,
      `${path} waited ${Math.round(elapsedMs)} ms, not the configured ${TIMEOUT_MS} ms`,
    );
    assert.ok(
      elapsedMs <= TIMEOUT_MS + MARGIN_MS,
      `${path} answered after ${Math.round(elapsedMs)} ms, more than ${TIMEOUT_MS} + ${MARGIN_MS} ms`,
    );
  }
  // Reading needs no lock in WAL mode: served at once.
  const read = await timed(() => portal.get('/users'));
  assert.deepEqual(read.response.json(), { users: ['alice'] });
  assert.ok(read.elapsedMs < TIMEOUT_MS, `a read waited ${Math.round(read.elapsedMs)} ms`);

  await lock.release();
  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: [] });
  const configurations = { user_configuration_list: await portal.admin.userConfigurationList('alice') };
  assert.equal(configurations.user_configuration_list.length, 1, "alice's refused create left no configuration");
  const created = await portal.post('/create', { user_id: 'bob', profile_id: 'employees' });
  assert.equal(created.status, 200);
  // bob's first attempt took no address: his configuration gets the next one after alice's.
  assert.match(created.text, /^Address = 10\.44\.0\.3\/24,fd44::3\/64$/m);
  assert.deepEqual((await portal.get('/users')).json(), { users: ['alice', 'bob'] });
});
