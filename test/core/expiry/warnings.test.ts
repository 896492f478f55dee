// `configuration.expiring`: announced once per configuration, `expiryWarning` (default P7D)
// before it expires, by the portal's scheduled passes (an injected clock moves time): not a
// second earlier, never twice, not again after a restart, not for a configuration made for
// less than the warning, and again once an /extend moved the expiry.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import type { PortalEvent } from '../../../src/core/events.js';
import { capturedLog } from '../../support/captured-log.js';
import { BOTH_PROTOCOLS_PROFILE, opensslCsr, wgGenkey } from '../../support/device-keys.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const DAY = 86_400_000;
const config: Partial<PortalConfigFile> = {
  sessionExpiry: 'P90D',
  supportedSessionExpiry: ['P3D', 'P30D'],
  ProfileList: [BOTH_PROTOCOLS_PROFILE],
};

type Expiring = Extract<PortalEvent, { type: 'configuration.expiring' }>;

/** The `configuration.expiring` events a portal publishes, from now on. */
function expiringEvents(portal: TestPortal): Expiring[] {
  const seen: Expiring[] = [];
  portal.portal.ctx.events.afterCommit((event) => {
    if (event.type === 'configuration.expiring') seen.push(event);
  });
  return seen;
}

async function createWireGuard(portal: TestPortal, userId: string, expiresIn?: string): Promise<string> {
  const { publicKey } = wgGenkey();
  const form = {
    user_id: userId,
    profile_id: 'both',
    public_key: publicKey,
    ...(expiresIn === undefined ? {} : { expires_in: expiresIn }),
  };
  const created = await portal.post('/create', form, { accept: 'application/x-wireguard-profile' });
  assert.equal(created.status, 200, created.text);
  return publicKey;
}

/** Lets the afterCommit listeners run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

test('a configuration is announced once, expiryWarning before its expiry, with its expiry; OpenVPN ones too', async (t) => {
  const start = Math.floor(Date.now() / 1000) * 1000;
  let now = new Date(start);
  const portal = await startTestPortal({ config, clock: { now: () => now } });
  t.after(() => portal.close());
  const seen = expiringEvents(portal);
  const wireGuard = await createWireGuard(portal, 'alice');
  const openVpn = await portal.post(
    '/create',
    { user_id: 'bob', profile_id: 'both', csr: opensslCsr('Ed25519').csrPem },
    { accept: 'application/x-openvpn-profile' },
  );
  assert.equal(openVpn.status, 200, openVpn.text);
  const [certificate] = await portal.admin.userConfigurationList('bob');
  assert.ok(certificate !== undefined);
  const expiresAt = start + 90 * DAY;

  now = new Date(expiresAt - 7 * DAY - 1000);
  await portal.reconcile();
  await settle();
  assert.equal(seen.length, 0, 'one second before the warning is due: nothing');

  now = new Date(expiresAt - 7 * DAY);
  await portal.reconcile();
  await portal.reconcile();
  await settle();
  assert.deepEqual(
    seen.map((event) => [
      event.configuration.connectionId,
      event.configuration.vpnProto,
      event.configuration.userId,
      event.expiresAt.getTime(),
    ]),
    [
      [wireGuard, 'wireguard', 'alice', expiresAt],
      [certificate.connection_id, 'openvpn', 'bob', expiresAt],
    ],
    'each once, though the pass ran twice',
  );
  now = new Date(expiresAt - 1000);
  await portal.reconcile();
  await settle();
  assert.equal(seen.length, 2, 'and never again');
});

test('a configuration made for no longer than expiryWarning is not announced; expiryWarning is configurable', async (t) => {
  const start = Math.floor(Date.now() / 1000) * 1000;
  let now = new Date(start);
  const portal = await startTestPortal({ config: { ...config, expiryWarning: 'P3D' }, clock: { now: () => now } });
  t.after(() => portal.close());
  const seen = expiringEvents(portal);
  await createWireGuard(portal, 'alice', 'P3D');
  const longer = await createWireGuard(portal, 'alice', 'P30D');
  for (const day of [1, 2, 26, 27, 29]) {
    now = new Date(start + day * DAY);
    await portal.reconcile();
  }
  await settle();
  assert.deepEqual(
    seen.map((event) => [event.configuration.connectionId, event.at.getTime()]),
    [[longer, start + 27 * DAY]],
    'the 30-day one on day 27, three days before its end; the 3-day one never',
  );
});

test('after /extend the configuration is announced again before its new expiry', async (t) => {
  const start = Math.floor(Date.now() / 1000) * 1000;
  let now = new Date(start);
  const portal = await startTestPortal({ config, clock: { now: () => now } });
  t.after(() => portal.close());
  const seen = expiringEvents(portal);
  const connectionId = await createWireGuard(portal, 'alice', 'P30D');
  now = new Date(start + 25 * DAY);
  await portal.reconcile();
  await portal.admin.extend({ user_id: 'alice', connection_id: connectionId, expires_in: 'P30D' });
  now = new Date(start + 47 * DAY);
  await portal.reconcile();
  now = new Date(start + 48 * DAY);
  await portal.reconcile();
  await settle();
  assert.deepEqual(
    seen.map((event) => [event.at.getTime(), event.expiresAt.getTime()]),
    [
      [start + 25 * DAY, start + 30 * DAY],
      [start + 48 * DAY, start + 55 * DAY],
    ],
  );
});

test('a restarted portal neither repeats a warning nor misses one that fell due while it was down', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'expiry-warnings-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const start = Math.floor(Date.now() / 1000) * 1000;
  let now = new Date(start);
  const first = await startTestPortal({ config, clock: { now: () => now }, dataDir });
  const seenFirst = expiringEvents(first);
  const soon = await createWireGuard(first, 'alice', 'P30D');
  const later = await createWireGuard(first, 'alice');
  now = new Date(start + 24 * DAY);
  await first.reconcile();
  await settle();
  assert.deepEqual(
    seenFirst.map((event) => event.configuration.connectionId),
    [soon],
  );
  await first.close();

  // Down for two months: `later` fell due meanwhile; the first pass at start announces it, and only it.
  now = new Date(start + 85 * DAY);
  const log = capturedLog();
  const second = await startTestPortal({
    config,
    clock: { now: () => now },
    dataDir,
    database: first.database,
    logger: log.logger,
  });
  t.after(() => second.close());
  const seenSecond = expiringEvents(second);
  await second.reconcile();
  await second.reconcile();
  await settle();
  const announced = log.lines().filter((line) => typeof line.msg === 'string' && line.msg.startsWith('announced '));
  assert.deepEqual(
    announced.map((line) => line['announced']),
    [1],
    'one configuration announced, by the pass at start, though three passes ran',
  );
  // The pass at start may have run before the test listened.
  assert.ok(
    seenSecond.every((event) => event.configuration.connectionId === later),
    'only the one that fell due',
  );
  const rows = await second.portal.ctx.db
    .selectFrom('wg_peers')
    .select(['public_key', 'expiry_warned'])
    .orderBy('expires_at')
    .execute();
  assert.deepEqual(
    rows.map((row) => [row.public_key, row.expiry_warned]),
    [[later, 1]],
    'the expired one is gone, the other recorded as announced',
  );
});
