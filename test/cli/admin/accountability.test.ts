// `vpn-portal admin attribution` and `legal-hold …`: an abuse report and an investigation's
// records from the command line, the reason kept in the audit log.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { adminCommandEnv, runAdminInProcess } from '../../support/admin-command.js';
import { openVpnConfiguration, openVpnEmployees, reportOpenVpnConnect } from '../../support/openvpn-sessions.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

function admin(portal: TestPortal, args: readonly string[]) {
  return runAdminInProcess(args, adminCommandEnv(portal));
}

test('attribution names who held a tunnel address, with the reason in the audit log, and refuses a lookup without a reason', async (t) => {
  const portal = await startTestPortal({ config: openVpnEmployees });
  t.after(portal.close);
  const connectionId = await openVpnConfiguration(portal, 'alice');
  await reportOpenVpnConnect(portal, connectionId, { originating_ip: '198.51.100.9', ip_four: '10.60.0.7' });
  const now = new Date(Date.now() + 1000).toISOString();

  const table = await admin(portal, ['attribution', '10.60.0.7', '--at', now, '--reason', 'CERT case 7']);
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^USER +DEVICE +PROFILE +CONNECTION_ID +NODE +CONNECTED +DISCONNECTED +IP_FOUR/);
  assert.match(table.stdout, /^alice +employees +\S+ +0 +\S+ +open +10\.60\.0\.7 +198\.51\.100\.9$/m);
  assert.doesNotMatch(table.stdout, /mapped/, 'no NAT translation for a tunnel address');

  const audit = JSON.parse((await admin(portal, ['audit', '--json'])).stdout) as {
    audit_log: { call: string; user_id: string | null; parameters: Record<string, string> }[];
  };
  const lookup = audit.audit_log.find((entry) => entry.call === 'attribution');
  assert.deepEqual([lookup?.user_id, lookup?.parameters['reason']], ['alice', 'CERT case 7']);

  const unexplained = await admin(portal, ['attribution', '10.60.0.7', '--at', now]);
  assert.equal(unexplained.code, 1, 'the portal refuses a lookup without a reason');
  assert.match(unexplained.stderr, /reason/);
  const noMoment = await admin(portal, ['attribution', '10.60.0.7']);
  assert.deepEqual([noMoment.code, /--at TIME/.test(noMoment.stderr)], [2, true]);
  const badPort = await admin(portal, ['attribution', '10.60.0.7', '--at', now, '--port', 'http']);
  assert.deepEqual([badPort.code, /--port: "http" is not a port number/.test(badPort.stderr)], [2, true]);
});

test("legal-hold create, list and release keep and then free a user's records, and a hold needs a reason and an end", async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  await portal.admin.create({ user_id: 'bob', profile_id: 'employees' });
  const until = new Date(Date.now() + 30 * 86_400_000).toISOString();

  const created = await admin(portal, [
    'legal-hold',
    'create',
    '--user',
    'bob',
    '--reason',
    'order 4711',
    '--until',
    until,
  ]);
  assert.equal(created.code, 0, created.stderr);
  const holdId = /^(\S+): bob's records kept until /.exec(created.stdout)?.[1] ?? '';
  assert.notEqual(holdId, '');

  const listed = await admin(portal, ['legal-hold', 'list']);
  assert.match(listed.stdout, /^HOLD_ID +USER +DEVICE +STATE +CREATED +UNTIL +RELEASED +REASON\n/);
  assert.match(listed.stdout, new RegExp(`^${holdId} +bob +active +\\S+ +\\S+ +order 4711$`, 'm'));

  const released = await admin(portal, ['legal-hold', 'release', holdId]);
  assert.equal(released.code, 0, released.stderr);
  const after = JSON.parse((await admin(portal, ['legal-hold', 'list', '--json'])).stdout) as {
    legal_holds: { hold_id: string; state: string }[];
  };
  assert.deepEqual(
    after.legal_holds.map((hold) => [hold.hold_id, hold.state]),
    [[holdId, 'released']],
  );

  const noReason = await admin(portal, ['legal-hold', 'create', '--user', 'bob', '--until', until]);
  assert.deepEqual([noReason.code, /--reason and --until/.test(noReason.stderr)], [2, true]);
  const both = await admin(portal, [
    'legal-hold',
    'create',
    '--user',
    'bob',
    '--device-id',
    'dev_x',
    '--reason',
    'r',
    '--until',
    until,
  ]);
  assert.equal(both.code, 2, 'a user or a device, not both');
  assert.equal(
    (await admin(portal, ['legal-hold', 'list', '--json'])).stdout.match(/hold_id/g)?.length,
    1,
    'nothing more was made',
  );
});
