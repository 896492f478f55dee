// A console change that fails with an error of the portal's (500) or for a database outage (503)
// answers a console page that says so in plain words, with the status kept, not the Admin API's
// JSON error body; the Admin API itself keeps answering JSON for the same failure. Over plain
// HTTP, as the console's forms send it.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { confirmChange, signIn } from '../../support/console-forms.js';
import { errorBody } from '../../support/raw-http.js';
import { holdWriteLock } from '../../support/sqlite-write-lock.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { refuseWrites } from '../../support/refusing-trigger.js';

/** The text of a page's problem line, tags removed. */
function problemText(page: string): string {
  const line = /<p class="problem" role="alert">([\s\S]*?)<\/p>/.exec(page)?.[1];
  assert.ok(line !== undefined, `the page has a problem line:\n${page}`);
  return line.replace(/<[^>]+>/g, '').replaceAll('&#39;', "'");
}

/** The database refuses every change of a user with an error of the given SQLSTATE (PostgreSQL) or a plain abort (SQLite). */
function refuseUserChanges(portal: TestPortal, sqlState: string | null): Promise<() => Promise<void>> {
  return refuseWrites(
    portal.portal.ctx.db,
    'refuse_user_change',
    'UPDATE',
    'users',
    'users may not change',
    sqlState === null ? {} : { sqlState },
  );
}

/** Another process takes the SQLite database's write lock until released; killed at the test's end. */
async function lockedSqlite(t: TestContext, databaseFile: string): Promise<() => Promise<void>> {
  const lock = await holdWriteLock(databaseFile);
  t.after(() => lock.child.kill('SIGKILL'));
  return () => lock.release();
}

function assertConsolePage(answer: { status: number; headers: Headers; text: string }, status: number): void {
  assert.equal(answer.status, status, answer.text);
  assert.match(answer.headers.get('content-type') ?? '', /^text\/html/, answer.text);
  assert.match(answer.headers.get('content-security-policy') ?? '', /default-src 'none'/);
  assert.match(answer.text, /^<!doctype html>/);
  assert.match(answer.text, /<link rel="stylesheet" href="[^"]*\/admin\/assets\/console\.css">/);
  assert.ok(!answer.text.includes('"error"'), `no JSON error body in the page:\n${answer.text}`);
}

test('a console change the database refuses answers a console page saying it failed and nothing was changed (500), while the Admin API answers JSON', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);
  const session = await signIn(portal, portal.secret, 'users');
  const allow = await refuseUserChanges(portal, null);

  const answer = await confirmChange(portal, session, { action: 'disable_user', user_id: 'alice' });
  assertConsolePage(answer, 500);
  assert.match(answer.text, /<nav aria-label="Sections">/, 'the page has the signed-in layout');
  assert.equal(
    problemText(answer.text),
    'Failed (500): The change failed with an error of the portal’s; the portal log has the details. Nothing was changed.',
  );
  const api = await portal.post('/disable_user', { user_id: 'alice' });
  assert.equal(api.status, 500);
  assert.match(api.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(errorBody(api.text), 'internal error; the portal log has the details');

  await allow();
  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: [] }, 'nothing was changed');
});

test('a console change during a database outage answers a console page saying the database cannot be reached (503), while the Admin API answers JSON', async (t) => {
  const portal = await startTestPortal({ config: { databaseTimeout: 'PT1S' } });
  t.after(portal.close);
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);
  const session = await signIn(portal, portal.secret, 'users');
  // SQLite: another process holds the write lock past databaseTimeout. PostgreSQL: a write
  // waits past its lock timeout (55P03, lock_not_available), as behind a maintenance script's lock.
  const location = portal.portal.ctx.config.database;
  const release =
    location.dialect === 'sqlite' ? await lockedSqlite(t, location.path) : await refuseUserChanges(portal, '55P03');

  const answer = await confirmChange(portal, session, { action: 'disable_user', user_id: 'alice' });
  assertConsolePage(answer, 503);
  assert.equal(answer.headers.get('retry-after'), '5', 'the page keeps the answer’s Retry-After');
  assert.equal(
    problemText(answer.text),
    'Failed (503): The portal’s database cannot be reached just now, so the change could not be made. Try again shortly; the portal log has the details.',
  );
  const api = await portal.post('/disable_user', { user_id: 'alice' });
  assert.equal(api.status, 503);
  assert.equal(api.headers.get('retry-after'), '5');
  assert.match(api.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(errorBody(api.text), 'database unavailable, try again later');

  await release();
  assert.deepEqual((await portal.get('/disabled_users')).json(), { disabled_users: [] }, 'nothing was changed');
});
