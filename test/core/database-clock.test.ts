// Portal instances on one PostgreSQL server judge expiry by the server's time when their own
// clock is behind it: a configuration that expired by the server's clock is not wanted on the
// nodes by an instance ten minutes behind (which would put it back with a reconcile pass until
// the sweep), and follows its own clock again at once when that is set right. An instance ahead
// keeps its own time; either is logged once. On SQLite (one host, no server) the clock is the
// host's. The instance's clock is a test double (a clock we can set behind); the database server
// and its time are real.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DatabaseClock } from '../../src/core/database-clock.js';
import { systemClock, formatAtom, type Clock } from '../../src/shared/time.js';
import { isPostgres } from '../../src/storage/database.js';
import { activePeers } from '../../src/storage/wg-peers.js';
import { capturedLog } from '../support/captured-log.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';

const TEN_MINUTES_MS = 10 * 60_000;
let portal: TestPortal;

before(async () => {
  portal = await startTestPortal();
});
after(() => portal.close());

/** A clock set `offsetMs` from the true time. */
const shiftedBy = (offsetMs: number): Clock => ({ now: () => new Date(Date.now() + offsetMs) });

/** Samples until the clock took a reading (a sample whose round trip took over a second is dropped, as on a busy machine). */
async function sampled(clock: DatabaseClock, taken: () => boolean): Promise<void> {
  for (let tries = 0; tries < 20 && !taken(); tries++) await clock.sample();
}

test('a portal on PostgreSQL holds its clock to the server’s; on SQLite it keeps the host’s', () => {
  const { clock, db } = portal.portal.ctx;
  if (isPostgres(db)) assert.ok(clock instanceof DatabaseClock);
  else assert.equal(clock, systemClock);
});

test('an instance ten minutes behind the server takes the server’s time once sampled, and says so once', async () => {
  const { db } = portal.portal.ctx;
  const log = capturedLog('info');
  const clock = new DatabaseClock(shiftedBy(-TEN_MINUTES_MS), db, log.logger);
  await sampled(clock, () => clock.behindMs() > 0);
  await clock.sample();
  const lag = Date.now() - clock.now().getTime();
  if (!isPostgres(db)) {
    assert.ok(Math.abs(lag - TEN_MINUTES_MS) < 1_000, 'no server: the clock stays as it is');
    assert.equal(log.lines().length, 0);
    return;
  }
  assert.ok(Math.abs(lag) < 1_000, `the clock is ${lag} ms off the true time`);
  const warnings = log.lines().filter((line) => /behind the database server/.test(line.msg ?? ''));
  assert.equal(warnings.length, 1, log.text());
});

test('when the host’s clock is set right (NTP), the portal’s follows at once: it does not run ahead until the next sample', async () => {
  const { db } = portal.portal.ctx;
  let offsetMs = -TEN_MINUTES_MS;
  const log = capturedLog('info');
  const clock = new DatabaseClock({ now: () => new Date(Date.now() + offsetMs) }, db, log.logger);
  await sampled(clock, () => clock.behindMs() > 0);
  offsetMs = 0;
  assert.ok(Math.abs(clock.now().getTime() - Date.now()) < 1_000, `${clock.now().getTime() - Date.now()} ms off`);
  assert.equal(clock.behindMs(), 0);
});

test('an instance ahead of the server keeps its own time and says so once', async () => {
  const { db } = portal.portal.ctx;
  const log = capturedLog('info');
  const clock = new DatabaseClock(shiftedBy(TEN_MINUTES_MS), db, log.logger);
  await clock.sample();
  await clock.sample();
  assert.ok(Math.abs(clock.now().getTime() - Date.now() - TEN_MINUTES_MS) < 1_000);
  assert.equal(clock.behindMs(), 0);
  const warnings = log.lines().filter((line) => /ahead of the database server/.test(line.msg ?? ''));
  assert.equal(warnings.length, isPostgres(db) ? 1 : 0, log.text());
});

test('a configuration expired by the server’s clock is not wanted on the nodes by an instance behind it', async () => {
  const { db } = portal.portal.ctx;
  await portal.admin.create({ user_id: 'mallory', profile_id: 'employees' });
  const expiredAt = formatAtom(new Date(Date.now() - 5 * 60_000));
  await db.updateTable('wg_peers').set({ expires_at: expiredAt }).where('user_id', '=', 'mallory').execute();
  const behind = shiftedBy(-TEN_MINUTES_MS);
  const wanted = async (clock: Clock) =>
    (await activePeers(db, { now: formatAtom(clock.now()) })).filter((peer) => peer.userId === 'mallory');

  // By its own clock the instance still counts the configuration as valid...
  assert.equal((await wanted(behind)).length, 1);
  const held = new DatabaseClock(behind, db, capturedLog('error').logger);
  await sampled(held, () => held.behindMs() > 0);
  // ...held to the server's, it does not (on SQLite there is no other instance's clock to hold to).
  assert.equal((await wanted(held)).length, isPostgres(db) ? 0 : 1);
});
