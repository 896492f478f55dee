// A database that cannot take a write because its disk is full, or because its file cannot be
// written, answers 503 JSON naming the cause ("database full" / "database read-only") — not a
// 500 — logs SQLite's own error once per call (never the failed ROLLBACK that followed it),
// leaves nothing half written, and serves the same calls again once the cause is gone. SQLite
// only, on a real small tmpfs (tests run as root), on both passes of test/run.sh.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { capturedLog, type CapturedLog } from '../support/captured-log.js';
import { errorBody } from '../support/raw-http.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';
import { mountTmpfs } from '../support/tmpfs.js';
import { undoStepsFor } from '../support/undo-steps.js';

/** Every call that writes, each refused: a new user, a new configuration, disable, destroy. */
const WRITES = [
  ['/create', { user_id: 'bob', profile_id: 'employees' }],
  ['/create', { user_id: 'alice', profile_id: 'employees' }],
  ['/disable_user', { user_id: 'alice' }],
  ['/destroy', { user_id: 'alice' }],
] as const;

async function assertWritesRefused(portal: TestPortal, message: string): Promise<void> {
  for (const [target, form] of WRITES) {
    const refused = await portal.post(target, form);
    assert.equal(refused.status, 503, `${target} ${JSON.stringify(form)}: ${refused.text}`);
    assert.match(refused.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(errorBody(refused.text), message);
    assert.equal(refused.headers.get('retry-after'), '60', 'a full or read-only database waits for someone to act');
  }
}

/** Alice as she was before the refused calls: one configuration, enabled, the only user. */
async function assertAliceUntouched(portal: TestPortal): Promise<void> {
  assert.deepEqual((await portal.get('/users')).json(), { users: ['alice'] });
  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: [] });
  const listed = { user_configuration_list: await portal.admin.userConfigurationList('alice') };
  assert.equal(listed.user_configuration_list.length, 1);
}

/** The writes work again, and the refused ones took nothing: bob gets the address after alice's. */
async function assertWritesWork(portal: TestPortal): Promise<void> {
  const created = await portal.post('/create', { user_id: 'bob', profile_id: 'employees' });
  assert.equal(created.status, 200, created.text);
  assert.match(created.text, /^Address = 10\.44\.0\.3\/24,fd44::3\/64$/m);
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);
  assert.equal((await portal.post('/destroy', { user_id: 'alice' })).status, 204);
  assert.deepEqual((await portal.get('/users')).json(), { users: ['bob'] });
}

/** SQLite's error is logged once per refused call, at error level with its code; the ROLLBACK failure never. */
function assertLoggedOncePerCall(log: CapturedLog, codePattern: RegExp): void {
  const errors = log.lines().filter((line) => line.level >= 50);
  assert.equal(errors.length, WRITES.length, log.text());
  for (const line of errors) assert.match(String(line['code']), codePattern, JSON.stringify(line));
  assert.doesNotMatch(log.text(), /cannot rollback/);
}

test('SQLite only: on a full disk create, disable and destroy answer 503 "database full" and work again once space is freed', async (t) => {
  const disk = mountTmpfs(16 * 1024 * 1024);
  const log = capturedLog();
  const portal = await startTestPortal({
    database: 'sqlite',
    dataDir: path.join(disk.dir, 'data'),
    logger: log.logger,
  }).catch((error: unknown) => {
    disk.unmount();
    throw error;
  });
  t.after(async () => {
    await portal.close();
    disk.unmount();
  });
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);

  disk.fill();
  await assertWritesRefused(portal, 'database full, try again later');
  await assertAliceUntouched(portal);
  assertLoggedOncePerCall(log, /^SQLITE_FULL$/);

  disk.free();
  await assertWritesWork(portal);
});

test('SQLite only: a database file the portal cannot write makes create, disable and destroy answer 503 "database read-only"', async (t) => {
  const disk = mountTmpfs(16 * 1024 * 1024);
  // Undone last first, whatever failed: portals closed, the file unlocked, the disk unmounted.
  const atEnd = undoStepsFor(t);
  atEnd(() => disk.unmount());
  const dataDir = path.join(disk.dir, 'data');
  const databaseFile = path.join(dataDir, 'db.sqlite');
  const before = await startTestPortal({ database: 'sqlite', dataDir });
  atEnd(() => before.close());
  assert.equal((await before.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);
  await before.close();

  // Immutable: not even root may open it for writing, as a file of another user would be for
  // the portal's user. SQLite opens it read-only; reads work, writes fail.
  execFileSync('chattr', ['+i', databaseFile]);
  const unlock = () => execFileSync('chattr', ['-i', databaseFile]);
  atEnd(unlock);
  const log = capturedLog();
  const readOnly = await startTestPortal({ database: 'sqlite', dataDir, logger: log.logger });
  atEnd(() => readOnly.close());
  await assertAliceUntouched(readOnly);
  await assertWritesRefused(readOnly, 'database read-only, try again later');
  await assertAliceUntouched(readOnly);
  assertLoggedOncePerCall(log, /^SQLITE_READONLY/);
  await readOnly.close();

  unlock();
  const after = await startTestPortal({ database: 'sqlite', dataDir });
  atEnd(() => after.close());
  await assertWritesWork(after);
});
