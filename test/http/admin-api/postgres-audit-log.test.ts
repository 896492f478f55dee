// Several portal instances on one PostgreSQL database, flooded with bad keys at once: the
// coalesced refusals still make one audit row per source, reason and minute, and every refusal
// is counted in it (the upsert on the bucket's unique key, not a read then a write).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditLog, ManualClock } from '../../support/admin-keys.js';
import { capturedLog } from '../../support/captured-log.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const config = { adminApi: { allowList: ['0.0.0.0/0', '::/0'], trustedProxyList: ['127.0.0.1/32'] } };

/** `count` refused requests from `address`, `inFlight` at a time. */
async function flood(portal: TestPortal, address: string, count: number, inFlight: number): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      next++;
      const response = await portal.get('/users', {}, { authorization: 'Bearer wrong', 'x-forwarded-for': address });
      assert.equal(response.status, 401);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

test('PostgreSQL, two portal instances flooded at once: one audit row per source and minute, with every refusal counted', async (t) => {
  const clock = new ManualClock('2026-03-02T09:00:00Z');
  const log = capturedLog('warn');
  const first = await startTestPortal({ clock, config, logger: log.logger });
  t.after(first.close);
  const second = await startTestPortal({
    clock,
    config,
    logger: log.logger,
    dataDir: first.dataDir,
    database: first.database,
  });
  t.after(second.close);

  await Promise.all([
    flood(first, '192.0.2.7', 300, 30),
    flood(second, '192.0.2.7', 300, 30),
    flood(first, '2001:db8:1:2::1', 100, 10),
    flood(second, '2001:db8:1:2::2', 100, 10),
  ]);

  assert.deepEqual(
    log.lines().filter((line) => String(line.msg).includes('audit log')),
    [],
    'no refusal went unrecorded',
  );
  const rows = (await auditLog(first)).map((row) => [
    row.status,
    row.detail,
    row.sourceAddress.startsWith('2001:') ? '2001:db8:1:2::/64' : row.sourceAddress,
    row.repeated,
  ]);
  assert.deepEqual(
    rows.sort((a, b) => String(a[2]).localeCompare(String(b[2]))),
    [
      [401, 'wrong secret', '192.0.2.7', 599],
      [401, 'wrong secret', '2001:db8:1:2::/64', 199],
    ],
    'one row per bucket; 1 + repeated is every refusal of both instances',
  );
});
