// The RADIUS accounting outbox survives kill -9: a Start queued while the accounting server is
// away, retransmitted by a `vpn-portal serve` process that is then killed with SIGKILL, is sent
// by the next process once the server is back — same Acct-Session-Id, with the delay since the
// session began.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { test } from 'node:test';
import { asNodeNumber, asProfileId, asUserId } from '../../src/shared/ids.js';
import { countOutboxRecords } from '../../src/storage/radius-outbox.js';
import { detailRecord, startFreeRadius } from '../support/freeradius.js';
import { PortalProcess } from '../support/portal-process.js';
import { defaultTestConfig, startTestPortal } from '../support/test-portal.js';
import { until } from '../support/until.js';

test('a record in the outbox of a portal killed with SIGKILL is sent after the restart', async (t) => {
  const radius = await startFreeRadius();
  t.after(() => radius.close());
  const folder = await mkdtemp(join(tmpdir(), 'radius-restart-'));
  t.after(() => rm(folder, { recursive: true, force: true }));
  const secretFile = join(folder, 'radius.secret');
  await writeFile(secretFile, radius.secret, { mode: 0o600 });
  const accounting = { radius: { servers: [{ address: `${radius.host}:${radius.port}`, secretFile }] } };
  await radius.stop();

  // The database and keys, and a session whose Start waits in the outbox.
  const dataDir = join(folder, 'data');
  const setup = await startTestPortal({ dataDir, config: { accounting } });
  const { ctx } = setup.portal;
  const at = new Date(Date.now() - 30_000);
  await ctx.events.change(ctx.db, async (_trx, announce) =>
    announce({
      type: 'session.started',
      at,
      configuration: {
        userId: asUserId('dora'),
        profileId: asProfileId('employees'),
        connectionId: 'key-dora',
        vpnProto: 'wireguard',
        nodeNumber: asNodeNumber(0),
      },
      ipFour: '10.44.0.9',
      ipSix: 'fd44::9',
      originatingIp: '203.0.113.40',
    }),
  );
  await setup.close();

  const configFile = join(folder, 'portal.json');
  await writeFile(
    configFile,
    JSON.stringify({ ...defaultTestConfig, logLevel: 'info', dataDir, database: setup.database, accounting }),
  );
  const first = new PortalProcess(configFile);
  t.after(() => first.stop());
  await first.ready();
  await first.waitFor(
    (line) => line.msg === 'no Accounting-Response; the record is sent again later',
    'a retransmission planned',
    30_000,
  );
  const killed = once(first.child, 'exit');
  first.child.kill('SIGKILL');
  await killed;

  await radius.start();
  const second = new PortalProcess(configFile);
  t.after(() => second.stop());
  await second.ready();
  const start = await detailRecord(radius, 'the Start', (record) => record['User-Name'] === 'dora', 90_000);
  assert.equal(start['Acct-Status-Type'], 'Start');
  assert.equal(start['Calling-Station-Id'], '203.0.113.40');
  assert.ok(Number(start['Acct-Delay-Time']) >= 30, `the delay since the session began: ${start['Acct-Delay-Time']}`);

  const check = await startTestPortal({ dataDir, config: { accounting }, database: setup.database });
  t.after(() => check.close());
  await until('the outbox to empty', async () => (await countOutboxRecords(check.portal.ctx.db)).size === 0, 30_000);
  assert.equal((await radius.records()).filter((record) => record['User-Name'] === 'dora').length, 1, 'sent once');
});
