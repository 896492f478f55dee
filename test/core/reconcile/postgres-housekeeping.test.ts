// With several portal instances on one PostgreSQL database, housekeeping runs once a day, not
// once per instance: it rides on the full reconcile pass, which one instance runs at a time,
// and the day of the last run is kept in the database.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { startTestPortal } from '../../support/test-portal.js';

test('PostgreSQL, two portal instances: housekeeping runs once per day between them', async (t) => {
  let now = new Date('2026-04-01T08:00:00Z');
  const runs: unknown[] = [];
  const logger = () =>
    pino(
      { level: 'info' },
      {
        write: (line: string) => {
          const entry = JSON.parse(line) as Record<string, unknown>;
          if (entry['msg'] === 'housekeeping done') runs.push(entry['day']);
        },
      },
    );
  const first = await startTestPortal({ clock: { now: () => now }, logger: logger() });
  t.after(first.close);
  const second = await startTestPortal({
    clock: { now: () => now },
    logger: logger(),
    dataDir: first.dataDir,
    database: first.database,
  });
  t.after(second.close);
  await Promise.all([first.reconcile(), second.reconcile()]);
  assert.deepEqual(runs, ['2026-04-01'], 'one run on the first day, by one instance');

  now = new Date('2026-04-02T08:00:00Z');
  await Promise.all([first.reconcile(), second.reconcile()]);
  await Promise.all([first.reconcile(), second.reconcile()]);
  assert.deepEqual(runs, ['2026-04-01', '2026-04-02'], 'one run on the second day');
  assert.deepEqual(Object.keys(await first.admin.stats({ since: '2026-03-31', until: '2026-04-01' })), ['employees']);
  assert.deepEqual(
    (await second.admin.stats({ since: '2026-03-31', until: '2026-04-01' }))['employees']?.map((day) => day.date),
    ['2026-03-31', '2026-04-01'],
    'each finished day aggregated once',
  );
});
