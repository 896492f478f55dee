// With several portal instances on one PostgreSQL database, each receipt's move is announced
// once: both instances check the deadlines every second (not under the reconcile lock), and
// each overdue receipt is claimed by exactly one; a receipt the other instance made is read,
// superseded and listed alike everywhere.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkRevocationDeadlines } from '../../../src/core/revocations/receipts.js';
import type { PortalEvent } from '../../../src/core/events.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const USERS = 30;

test('PostgreSQL, two portal instances: each overdue receipt is announced exactly once, and each instance sees the receipts of the other', async (t) => {
  let now = new Date(Math.floor(Date.now() / 1000) * 1000);
  // Deadline checks run only when the test says: the clock stands still until then.
  const config = { revocationDeadline: 'PT1H' };
  const first = await startTestPortal({ config, clock: { now: () => now } });
  t.after(first.close);
  const second = await startTestPortal({
    config,
    clock: { now: () => now },
    dataDir: first.dataDir,
    database: first.database,
  });
  t.after(second.close);
  const overdue: string[] = [];
  const listen = (portal: TestPortal) =>
    portal.portal.ctx.events.afterCommit((event: PortalEvent) => {
      if (event.type === 'revocation.overdue') overdue.push(event.revocation.revocationId);
    });
  listen(first);
  listen(second);

  const made: string[] = [];
  for (let index = 0; index < USERS; index++) {
    const portal = index % 2 === 0 ? first : second;
    await portal.admin.create({ user_id: `u${index}`, profile_id: 'employees' });
    made.push((await portal.admin.disableUser(`u${index}`)) ?? '');
  }
  assert.equal(
    (await second.admin.revocations({ state: 'pending' })).length,
    USERS,
    'every receipt, whichever instance made it',
  );

  now = new Date(now.getTime() + 2 * 3600_000);
  // Four checks at once, besides the instances' own once a second.
  const counts = await Promise.all(
    [first, second, first, second].map((portal) => checkRevocationDeadlines(portal.portal.ctx)),
  );
  assert.ok(counts.reduce((sum, count) => sum + count, 0) <= USERS, `no receipt claimed twice (${counts.join(' + ')})`);
  await sleep(1_500);
  assert.deepEqual([...overdue].sort(), [...made].sort(), 'every receipt announced once, none twice');

  await second.admin.enableUser('u0');
  assert.equal((await first.admin.revocation(made[0] ?? '')).state, 'superseded');
});
