// With several portal instances on one PostgreSQL database, `configuration.expiring` is still
// announced once per configuration: the instances run the warning pass at the same moment
// (it is not under the reconcile lock), and each configuration is claimed by exactly one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { announceExpiringConfigurations } from '../../../src/core/expiry/warnings.js';
import type { PortalEvent } from '../../../src/core/events.js';
import { BOTH_PROTOCOLS_PROFILE, wgGenkey } from '../../support/device-keys.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const DAY = 86_400_000;
const CONFIGURATIONS = 60;

test('PostgreSQL, two portal instances running the warning pass at once: each configuration is announced exactly once', async (t) => {
  const start = Math.floor(Date.now() / 1000) * 1000;
  let now = new Date(start);
  const config = { ProfileList: [BOTH_PROTOCOLS_PROFILE] };
  const first = await startTestPortal({ config, clock: { now: () => now } });
  t.after(first.close);
  const second = await startTestPortal({
    config,
    clock: { now: () => now },
    dataDir: first.dataDir,
    database: first.database,
  });
  t.after(second.close);
  const announced: string[] = [];
  const listen = (portal: TestPortal) =>
    portal.portal.ctx.events.afterCommit((event: PortalEvent) => {
      if (event.type === 'configuration.expiring') announced.push(event.configuration.connectionId);
    });
  listen(first);
  listen(second);

  const made: string[] = [];
  for (let index = 0; index < CONFIGURATIONS; index++) {
    const { publicKey } = wgGenkey();
    const portal = index % 2 === 0 ? first : second;
    const created = await portal.post(
      '/create',
      { user_id: `u${index}`, profile_id: 'both', public_key: publicKey },
      { accept: 'application/x-wireguard-profile' },
    );
    assert.equal(created.status, 200, created.text);
    made.push(publicKey);
  }

  now = new Date(start + 85 * DAY);
  const counts = await Promise.all(
    [first, second, first, second].map((portal) => announceExpiringConfigurations(portal.portal.ctx)),
  );
  await Promise.all([first.reconcile(), second.reconcile()]);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(
    counts.reduce((sum, count) => sum + count, 0),
    CONFIGURATIONS,
    `the passes together announced each once (${counts.join(' + ')})`,
  );
  assert.deepEqual([...announced].sort(), [...made].sort(), 'every configuration once, none twice');
});
