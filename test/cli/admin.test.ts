// `vpn-portal admin …` against the real portal: every command, tables for people and `--json`
// for scripts, the portal found through flags, the environment or the portal's configuration,
// a public key with `+` and `/` deleted without any quoting, a WireGuard file as a terminal QR
// code, keyless files for devices that keep their keys and their renewal (extend), enrollment
// tokens made, listed and revoked, and exit codes a script can rely on. Most commands run the
// command's code in this process; those about the process itself (its exit codes, the portal's
// configuration file, --help) start `vpn-portal` as a process.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { X509Certificate } from 'node:crypto';
import QRCode from 'qrcode';
import { BOTH_PROTOCOLS_PROFILE, opensslCsr, wgGenkey } from '../support/device-keys.js';
import { adminCommandEnv, runAdminInProcess } from '../support/admin-command.js';
import { makeAdminKey } from '../support/admin-keys.js';
import { patchOp, scimClient } from '../support/scim-client.js';
import { runCli } from '../support/portal-process.js';
import { openVpnConfiguration, openVpnEmployees, reportOpenVpnConnect } from '../support/openvpn-sessions.js';
import { defaultTestConfig, startTestPortal, type TestPortal } from '../support/test-portal.js';
import { verifyWebhookSignature, WebhookReceiver } from '../support/webhook-receiver.js';

/** A command as an administrator types it; run in this process (test/support/admin-command.ts). */
function admin(portal: TestPortal, args: readonly string[]) {
  return runAdminInProcess(args, adminCommandEnv(portal));
}

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-admin-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('create writes a WireGuard file, and the listings show the user and the configuration as tables and as JSON', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const dir = tempDir(t);
  const file = path.join(dir, 'alice.conf');
  const created = await admin(portal, [
    'create',
    'alice',
    'employees',
    '--format',
    'wireguard',
    '--display-name',
    "Alice's laptop",
    '--expires-in',
    'PT12H',
    '-o',
    file,
  ]);
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /^wrote .*alice\.conf \(application\/x-wireguard-profile, expires \d{4}-/);
  assert.match(readFileSync(file, 'utf8'), /^\[Interface\]\nPrivateKey = /);
  assert.match(readFileSync(file, 'utf8'), /\nEndpoint = [^\n]+\n$/, 'the file ends in one newline');
  assert.equal(statSync(file).mode & 0o777, 0o600, 'the file holding a private key is 0600');

  const users = await admin(portal, ['users']);
  assert.equal(users.stdout, 'USER   DIRECTORY\nalice\n');
  const usersJson = await admin(portal, ['users', '--json']);
  assert.deepEqual(JSON.parse(usersJson.stdout), { users: ['alice'], directory_inactive: [] });

  const configurations = await admin(portal, ['configurations', 'alice', '--json']);
  const [configuration] = (
    JSON.parse(configurations.stdout) as { user_configuration_list: { connection_id: string; display_name: string }[] }
  ).user_configuration_list;
  assert.equal(configuration?.display_name, "Alice's laptop");
  const table = await admin(portal, ['configurations', 'alice']);
  assert.match(table.stdout, /^CONNECTION_ID +PROFILE +PROTO +EXPIRES +DISPLAY_NAME\n/);
  assert.ok(table.stdout.includes(`${configuration?.connection_id ?? '?'}  employees  wireguard`), table.stdout);

  const all = await admin(portal, ['connections', '--all', '--json']);
  assert.deepEqual(
    Object.keys((JSON.parse(all.stdout) as { connection_list: Record<string, unknown> }).connection_list),
    ['employees'],
  );
  const connected = await admin(portal, ['connected-users', '--all']);
  assert.equal(connected.stdout, 'PROFILE    USER\nemployees  alice\n');
  // Without --all only connected devices: none has done a handshake.
  assert.deepEqual(JSON.parse((await admin(portal, ['connected-users', '--json'])).stdout), {
    connected_users: { employees: [] },
  });
});

test('delete-connection takes a public key with + and / as it is, and disable, enable, destroy and delete-authorizations work', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  // Until one key has a + or a /, as most do.
  let connectionId = '';
  for (let attempt = 0; attempt < 20 && !/[+/]/.test(connectionId); attempt++) {
    await portal.admin.create({ user_id: 'bob', profile_id: 'employees' });
    const list = await portal.admin.userConfigurationList('bob');
    connectionId = list.find((entry) => /[+/]/.test(entry.connection_id))?.connection_id ?? '';
  }
  assert.match(connectionId, /[+/]/);
  const before = (await portal.admin.userConfigurationList('bob')).length;
  const deleted = await admin(portal, ['delete-connection', 'bob', connectionId]);
  assert.equal(deleted.code, 0, deleted.stderr);
  // The test portal's node never answers: the receipt says so.
  const pendingOnNode0 = ': pending: node 0 did not confirm the removal yet \\(revocation [0-9a-f-]{36}\\)\n$';
  assert.match(
    deleted.stdout,
    new RegExp(`^deleted connection ${connectionId.replace(/[+/]/g, '\\$&')} of bob${pendingOnNode0}`),
  );
  const after = await portal.admin.userConfigurationList('bob');
  assert.equal(after.length, before - 1);
  assert.ok(!after.some((entry) => entry.connection_id === connectionId));

  await portal.admin.create({ user_id: 'bob', profile_id: 'employees' });
  assert.match((await admin(portal, ['disable', 'bob'])).stdout, new RegExp(`^disabled bob${pendingOnNode0}`));
  assert.deepEqual(JSON.parse((await admin(portal, ['disabled-users', '--json'])).stdout), {
    disabled_users: ['bob'],
    directory_inactive: [],
  });
  assert.equal((await admin(portal, ['enable', 'bob', '--json'])).stdout, '{"ok":true}\n');
  assert.deepEqual(await portal.admin.disabledUsers(), []);
  assert.equal((await admin(portal, ['delete-authorizations', 'bob'])).code, 0);
  assert.match((await admin(portal, ['destroy', 'bob'])).stdout, new RegExp(`^destroyed bob${pendingOnNode0}`));
  assert.deepEqual(await portal.admin.users(), []);
});

test('the user listings read every page and mark whom the directory calls inactive, as enable would refuse them', async (t) => {
  const [employees] = defaultTestConfig.ProfileList ?? [];
  assert.ok(employees !== undefined);
  const portal = await startTestPortal({ config: { ProfileList: [{ ...employees, wRangeFour: '10.44.0.0/22' }] } });
  t.after(portal.close);
  // More users than one page of the listing holds (1,000), so that the last is on a second page.
  const names = Array.from({ length: 1000 }, (_, index) => `user${String(index).padStart(4, '0')}`);
  for (let start = 0; start < names.length; start += 50)
    await Promise.all(
      names.slice(start, start + 50).map(async (user_id) => {
        const created = await portal.post('/create', { user_id, profile_id: 'employees' });
        assert.equal(created.status, 200, created.text);
      }),
    );
  const scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
  const zoe = await scim.send('POST', 'Users', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: 'zoe',
    active: true,
  });
  assert.equal(zoe.status, 201, JSON.stringify(zoe.body));
  await portal.post('/create', { user_id: 'zoe', profile_id: 'employees' });
  // The directory calls zoe inactive; an administrator disables user0001, whom it does not manage.
  await scim.send(
    'PATCH',
    `Users/${String(zoe.body?.['id'])}`,
    patchOp({ op: 'replace', path: 'active', value: false }),
  );
  assert.equal((await portal.post('/disable_user', { user_id: 'user0001' })).status, 204);

  const users = JSON.parse((await admin(portal, ['users', '--json'])).stdout) as { users: string[] };
  assert.deepEqual(users, { users: [...names, 'zoe'], directory_inactive: ['zoe'] }, 'zoe is on the second page');
  const table = (await admin(portal, ['users'])).stdout;
  assert.ok(table.endsWith('\nuser0999\nzoe       inactive\n'), table.slice(-80));

  const disabled = await admin(portal, ['disabled-users']);
  assert.equal(disabled.stdout, 'USER      DIRECTORY\nuser0001\nzoe       inactive\n');
  assert.deepEqual(JSON.parse((await admin(portal, ['disabled-users', '--json'])).stdout), {
    disabled_users: ['user0001', 'zoe'],
    directory_inactive: ['zoe'],
  });
});

test('--qr prints the WireGuard file, without its final newline, as a terminal QR code', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const file = path.join(tempDir(t), 'phone.conf');
  const result = await admin(portal, ['create', 'carol', 'employees', '--qr', '-o', file]);
  assert.equal(result.code, 0, result.stderr);
  const expected = await QRCode.toString(readFileSync(file, 'utf8').replace(/\n$/, ''), {
    type: 'terminal',
    small: true,
  });
  assert.equal(result.stdout, `${expected}\n`);
  assert.match(result.stdout, /[▀▄█]/);
  const printed = await admin(portal, ['create', 'carol', 'employees', '--format', 'wireguard']);
  assert.match(printed.stdout, /\nEndpoint = [^\n]+\n$/, 'printed, the file ends in one newline too');
  const openVpn = await admin(portal, ['create', 'carol', 'employees', '--format', 'openvpn', '--qr']);
  assert.equal(openVpn.code, 2);
  assert.match(openVpn.stderr, /--qr needs a WireGuard format/);
});

test('the portal and key are found in the portal configuration file when neither flags nor environment name them', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const dir = tempDir(t);
  const config = path.join(dir, 'portal.json');
  writeFileSync(
    config,
    JSON.stringify({
      listen: { host: '127.0.0.1', port: Number(new URL(portal.portal.url).port) },
      dataDir: portal.dataDir,
      ProfileList: [
        { profileId: 'employees', displayName: 'E', hostName: 'h', wRangeFour: '10.44.0.0/24', wRangeSix: 'fd44::/64' },
      ],
    }),
  );
  await portal.admin.create({ user_id: 'dave', profile_id: 'employees' });
  const result = await runCli(['admin', 'users', '--config', config], {
    env: { VPN_PORTAL_URL: '', VPN_PORTAL_KEY_FILE: '' },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout, 'USER  DIRECTORY\ndave\n');
  // Flags win over the environment.
  const flags = await runCli(
    [
      'admin',
      'users',
      '--url',
      `${portal.portal.url}/vpn-user-portal/`,
      '--key-file',
      portal.portal.ctx.keys.adminApiKeyPath,
    ],
    {
      env: { VPN_PORTAL_URL: 'http://127.0.0.1:2/', VPN_PORTAL_KEY_FILE: '/nonexistent' },
    },
  );
  assert.equal(flags.stdout, 'USER  DIRECTORY\ndave\n');
});

test('disable --wait prints the receipt once decided: exit 0 when applied, 3 when overdue; revocation and revocations show receipts', async (t) => {
  const portal = await startTestPortal({ config: { revocationDeadline: 'PT1S' } });
  t.after(portal.close);
  await portal.admin.create({ user_id: 'dave', profile_id: 'employees' });
  const overdue = await admin(portal, ['disable', 'dave', '--wait']);
  assert.equal(overdue.code, 3, overdue.stderr);
  const [, revocationId = ''] =
    /^disabled dave: overdue: node 0 did not confirm the removal yet \(revocation ([0-9a-f-]{36})\)\n$/.exec(
      overdue.stdout,
    ) ?? [];
  assert.notEqual(revocationId, '', overdue.stdout);

  // A user whose configurations are gone already: nothing is on a node, applied at once.
  await portal.admin.create({ user_id: 'erin', profile_id: 'employees' });
  await portal.admin.deleteConnection(
    'erin',
    (await portal.admin.userConfigurationList('erin'))[0]?.connection_id ?? '',
  );
  const applied = await admin(portal, ['disable', 'erin', '--wait', '--json']);
  assert.equal(applied.code, 0, applied.stderr);
  const answer = JSON.parse(applied.stdout) as { ok: boolean; revocation: { state: string; nodes: unknown[] } };
  assert.deepEqual([answer.ok, answer.revocation.state, answer.revocation.nodes], [true, 'applied', []]);

  const shown = await admin(portal, ['revocation', revocationId]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(
    shown.stdout,
    new RegExp(
      `^revocation ${revocationId} \\(disable_user of dave, \\S+\\): overdue: node 0 did not confirm the removal yet\nNODE +STATE +APPLIED +CONNECTION_IDS\n0 +pending +\\S+\n$`,
    ),
  );
  assert.equal(
    (await admin(portal, ['revocation', revocationId, '--wait'])).code,
    3,
    'waiting for an overdue receipt ends at once',
  );
  const listed = await admin(portal, ['revocations', '--state', 'pending']);
  assert.match(listed.stdout, /^REVOCATION_ID +USER +REASON +STATE +REQUESTED +PENDING_NODES\n/);
  assert.match(listed.stdout, new RegExp(`^${revocationId} +dave +disable_user +overdue +\\S+ +0$`, 'm'));
  assert.equal((await admin(portal, ['revocations', '--state', 'done'])).code, 2);
});

test('exit codes: 1 with the portal message when it refuses, 2 for a usage mistake, 3 when the portal cannot be reached', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const refused = await admin(portal, ['disable', 'nobody']);
  assert.equal(refused.code, 1);
  assert.equal(refused.stderr, 'vpn-portal admin: 400 user does not exist\n');
  const refusedJson = await admin(portal, ['create', 'erin', 'no-such-profile', '--json']);
  assert.equal(refusedJson.code, 1);
  assert.deepEqual(JSON.parse(refusedJson.stderr), {
    error: '404 no such "profile_id": "no-such-profile"; known profiles: employees',
    status: 404,
  });
  const dir = tempDir(t);
  writeFileSync(path.join(dir, 'wrong.key'), `${'0'.repeat(64)}\n`);
  const wrongKey = await runCli(['admin', 'users'], {
    env: { ...adminCommandEnv(portal), VPN_PORTAL_KEY_FILE: path.join(dir, 'wrong.key') },
  });
  assert.equal(wrongKey.code, 1);
  assert.equal(wrongKey.stderr, 'vpn-portal admin: 401 authentication required\n');
  const notAKey = await runCli(['admin', 'users'], {
    env: { ...adminCommandEnv(portal), VPN_PORTAL_KEY_FILE: path.join(portal.dataDir, 'keys', 'ca', 'ca.crt') },
  });
  assert.equal(notAKey.code, 2);
  assert.match(notAKey.stderr, /ca\.crt does not hold an Admin API key/);

  const usage = await admin(portal, ['disable']);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /admin disable takes USER\nusage: vpn-portal admin/);
  assert.equal((await admin(portal, ['users', '--bogus'])).code, 2);
  assert.equal((await admin(portal, ['users', '--all'])).code, 2, 'a flag the command does not take');
  assert.equal((await admin(portal, ['frobnicate'])).code, 2);

  const unreachable = await runCli(['admin', 'users'], {
    env: { ...adminCommandEnv(portal), VPN_PORTAL_URL: 'http://127.0.0.1:2/vpn-user-portal/' },
  });
  assert.equal(unreachable.code, 3);
  assert.match(unreachable.stderr, /^vpn-portal admin: cannot reach the portal: .*ECONNREFUSED/);
  // A port fetch never connects to, whatever listens there: said in words, not undici's "bad port".
  const blockedPort = await runCli(['admin', 'users'], {
    env: { ...adminCommandEnv(portal), VPN_PORTAL_URL: 'http://127.0.0.1:10080/vpn-user-portal/' },
  });
  assert.equal(blockedPort.code, 3);
  assert.match(
    blockedPort.stderr,
    /cannot reach the portal: bad port \(fetch never connects to a port the Fetch standard blocks/,
  );
  const help = await runCli(['admin', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /delete-connection USER CONNECTION_ID/);
});

test('who-had names who had a tunnel address at a moment, in any IPv6 form, and says so when nobody had it', async (t) => {
  const portal = await startTestPortal({ config: openVpnEmployees });
  t.after(portal.close);
  const connectionId = await openVpnConfiguration(portal, 'alice');
  await reportOpenVpnConnect(portal, connectionId, {
    originating_ip: '198.51.100.9',
    ip_four: '10.60.0.7',
    ip_six: 'fd60::7',
  });
  const now = new Date(Date.now() + 1000).toISOString();

  const table = await admin(portal, ['who-had', '10.60.0.7', '--at', now]);
  assert.equal(table.code, 0, table.stderr);
  assert.match(
    table.stdout,
    /^USER +PROFILE +CONNECTION_ID +NODE +CONNECTED +DISCONNECTED +IP_FOUR +IP_SIX +CLIENT_IP\n/,
  );
  assert.match(
    table.stdout,
    new RegExp(
      `^alice +employees +${connectionId.replace(/[+/]/g, '\\$&')} +0 +\\S+ +open +10\\.60\\.0\\.7 +fd60::7 +198\\.51\\.100\\.9$`,
      'm',
    ),
  );
  const json = JSON.parse((await admin(portal, ['who-had', 'fd60:0:0::7', '--at', now, '--json'])).stdout) as {
    connection_log: { user_id: string }[];
  };
  assert.deepEqual(
    json.connection_log.map((entry) => entry.user_id),
    ['alice'],
    'the long IPv6 form finds the session too',
  );
  const before = await admin(portal, ['who-had', '10.60.0.7', '--at', '2020-01-01T00:00:00Z']);
  assert.deepEqual([before.code, before.stdout], [0, 'nobody had 10.60.0.7 at 2020-01-01T00:00:00Z\n']);
  const wrong = await admin(portal, ['who-had', '10.60.0.300']);
  assert.equal(wrong.code, 1, 'the portal refuses it');
  assert.match(wrong.stderr, /invalid value for "ip"/);
  assert.equal((await admin(portal, ['who-had'])).code, 2, 'the address is required');
});

test('admin-key create, list and revoke work over the Admin API: the key printed once on the last line, the list without it, a wider key refused', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const created = await admin(portal, [
    'admin-key',
    'create',
    'helpdesk',
    '--scope',
    'admin',
    '--profile',
    'employees',
    '--allow',
    '127.0.0.0/8',
    '--expires-in',
    'P30D',
  ]);
  assert.equal(created.code, 0, created.stderr);
  const lines = created.stdout.trimEnd().split('\n');
  const key = lines.at(-1) ?? '';
  assert.match(key, /^vpa_/);
  assert.match(
    lines[0] ?? '',
    /^created admin key "helpdesk" \(id \w+\): scope admin; profiles employees; expires \d{4}-/,
  );

  const list = await admin(portal, ['admin-key', 'list']);
  assert.match(
    list.stdout,
    /^NAME +SCOPE +PROFILES +ALLOW +CREATED +EXPIRES +LAST_USED +STATE\nhelpdesk +admin +employees +127\.0\.0\.0\/8 +\S+ +\S+ +never +active\n$/,
  );
  assert.ok(!list.stdout.includes(key.slice(4)), 'the list never shows the key');

  // With the new key: it may not make a key for every profile.
  const dir = tempDir(t);
  const keyFile = path.join(dir, 'helpdesk.key');
  writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
  const wider = await runCli(
    ['admin', 'admin-key', 'create', 'wider', '--allow', '127.0.0.1/32', '--expires-in', 'P1D', '--key-file', keyFile],
    {
      env: { VPN_PORTAL_URL: `${portal.portal.url}/vpn-user-portal/` },
    },
  );
  assert.equal(wider.code, 1, 'the portal refused it');
  assert.match(
    wider.stderr,
    /403 key "helpdesk" may not make key "wider": every profile is more than its own profiles \(employees\)/,
  );

  const revoked = await admin(portal, ['admin-key', 'revoke', 'helpdesk']);
  assert.deepEqual([revoked.code, revoked.stdout], [0, 'revoked 1 key(s) named "helpdesk"\n']);
  assert.match((await admin(portal, ['admin-key', 'list', '--json'])).stdout, /"state":"revoked"/);
  assert.equal(
    (await admin(portal, ['admin-key', 'create', 'x', '--scope', 'root'])).code,
    2,
    'an unknown scope is a usage mistake',
  );
});

test('history and stats read the extensions: the connection log as a table or JSON, a page at a time, and the daily series', async (t) => {
  const portal = await startTestPortal({ config: openVpnEmployees });
  t.after(portal.close);
  // Two OpenVPN sessions, as a node reports them through the Node API.
  for (const [user, ipFour] of [
    ['alice', '10.60.0.2'],
    ['bob', '10.60.0.3'],
  ] as const) {
    await reportOpenVpnConnect(portal, await openVpnConfiguration(portal, user), {
      originating_ip: '198.51.100.9',
      ip_four: ipFour,
    });
  }
  const table = await admin(portal, ['history', '--user', 'alice']);
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^USER +PROFILE +PROTO +NODE +FROM +CONNECTED +DISCONNECTED/m);
  assert.match(table.stdout, /^alice +employees +openvpn +0 +198\.51\.100\.9 +\S+ +open /m);
  const page = JSON.parse((await admin(portal, ['history', '--limit', '1', '--json'])).stdout) as {
    connection_log: { user_id: string }[];
    next_cursor: string;
  };
  assert.equal(page.connection_log.length, 1);
  const next = JSON.parse(
    (await admin(portal, ['history', '--limit', '1', '--cursor', page.next_cursor, '--json'])).stdout,
  ) as {
    connection_log: { user_id: string }[];
  };
  assert.deepEqual([page.connection_log[0]?.user_id, next.connection_log[0]?.user_id].sort(), ['alice', 'bob']);
  assert.equal((await admin(portal, ['history', '--open', '--closed'])).code, 2, 'a contradiction is a usage mistake');

  const stats = JSON.parse((await admin(portal, ['stats', '--json'])).stdout) as { stats: Record<string, unknown[]> };
  assert.deepEqual(Object.keys(stats.stats), ['employees']);
  assert.match((await admin(portal, ['stats'])).stdout, /^PROFILE +DATE +MAX_CONNECTIONS +UNIQUE_USERS/m);
});

test('create --public-key and --csr make keyless files; extend renews them, an OpenVPN one with the new certificate to -o FILE', async (t) => {
  const portal = await startTestPortal({
    config: { supportedSessionExpiry: ['P1D'], ProfileList: [BOTH_PROTOCOLS_PROFILE] },
  });
  t.after(portal.close);
  const dir = tempDir(t);
  const device = wgGenkey();
  const wireGuard = await admin(portal, [
    'create',
    'alice',
    'both',
    '--format',
    'wireguard',
    '--public-key',
    device.publicKey,
    '--expires-in',
    'P1D',
  ]);
  assert.equal(wireGuard.code, 0, wireGuard.stderr);
  assert.match(wireGuard.stdout, /^\[Interface\]\nPrivateKey = @DEVICE_PRIVATE_KEY@\n/);
  const extended = await admin(portal, ['extend', 'alice', device.publicKey]);
  assert.equal(extended.code, 0, extended.stderr);
  const [listed] = await portal.admin.userConfigurationList('alice');
  assert.equal(extended.stdout, `extended ${device.publicKey} of alice until ${listed?.expires_at ?? '?'}\n`);

  const csrFile = path.join(dir, 'device.csr');
  const csr = opensslCsr('Ed25519');
  writeFileSync(csrFile, csr.csrPem);
  const openVpn = await admin(portal, [
    'create',
    'bob',
    'both',
    '--format',
    'openvpn',
    '--csr',
    csrFile,
    '--expires-in',
    'P1D',
  ]);
  assert.equal(openVpn.code, 0, openVpn.stderr);
  assert.doesNotMatch(openVpn.stdout, /<key>|PRIVATE KEY/);
  const [certificate] = await portal.admin.userConfigurationList('bob');
  const certFile = path.join(dir, 'device.crt');
  const renewed = await admin(portal, ['extend', 'bob', certificate?.connection_id ?? '', '-o', certFile, '--json']);
  assert.equal(renewed.code, 0, renewed.stderr);
  const answer = JSON.parse(renewed.stdout) as { vpn_proto: string; certificate: string };
  assert.equal(answer.vpn_proto, 'openvpn');
  assert.equal(readFileSync(certFile, 'utf8'), `${answer.certificate}\n`);
  assert.equal(
    new X509Certificate(answer.certificate).publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    csr.publicKeyPem,
  );

  const missing = await admin(portal, ['create', 'bob', 'both', '--csr', path.join(dir, 'nothing.csr')]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--csr: cannot read .*nothing\.csr: ENOENT/);
  const refused = await admin(portal, ['extend', 'bob', certificate?.connection_id ?? '', '--expires-in', 'P1D']);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /^vpn-portal admin: 409 the configuration expires at .*; extend never shortens/);
});

test('webhook create prints the secret once on its last line; list, test, deliveries, rotate and delete work from the command line', async (t) => {
  const portal = await startTestPortal({ config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8'] } } });
  t.after(portal.close);
  const receiver = await WebhookReceiver.start();
  t.after(() => receiver.close());

  const created = await admin(portal, [
    'webhook',
    'create',
    receiver.url,
    'user.created,user.destroyed',
    '--description',
    'helpdesk',
  ]);
  assert.equal(created.code, 0, created.stderr);
  const lines = created.stdout.trimEnd().split('\n');
  const secret = lines[lines.length - 1] ?? '';
  assert.match(secret, /^whsec_[A-Za-z0-9_-]{43}$/, 'the secret alone on the last line');
  const id = /created webhook (wh_[0-9a-f]{24}) for user\.created,user\.destroyed to /.exec(created.stdout)?.[1] ?? '';
  assert.notEqual(id, '');

  const list = await admin(portal, ['webhook', 'list']);
  assert.match(
    list.stdout,
    new RegExp(
      `^ID +URL +EVENTS +CREATED +OLD_SECRET_UNTIL +DESCRIPTION\\n${id} +${receiver.url} +user\\.created,user\\.destroyed +\\S+ +helpdesk\\n$`,
    ),
  );
  assert.equal(list.stdout.includes(secret), false, 'the list never shows the secret');

  const tested = await admin(portal, ['webhook', 'test', id]);
  assert.equal(tested.code, 0, tested.stderr);
  assert.match(tested.stdout, /^delivered 200 in \d+ ms: ok\n$/);
  assert.ok(
    verifyWebhookSignature(
      String(receiver.received[0]?.headers['vpn-portal-signature']),
      receiver.received[0]?.body ?? '',
      secret,
      Date.now() / 1000,
    ),
  );

  const deliveries = await admin(portal, ['webhook', 'deliveries', '--webhook', id, '--json']);
  const page = JSON.parse(deliveries.stdout) as { webhook_deliveries: { event_type: string; state: string }[] };
  assert.deepEqual(
    page.webhook_deliveries.map((entry) => [entry.event_type, entry.state]),
    [['webhook.test', 'delivered']],
  );
  const badState = await admin(portal, ['webhook', 'deliveries', '--state', 'lost']);
  assert.equal(badState.code, 2);
  assert.match(badState.stderr, /--state must be pending, delivered, failed, cancelled, not "lost"/);

  const rotated = await admin(portal, ['webhook', 'rotate', id, '--overlap', 'PT1H', '--json']);
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.match((JSON.parse(rotated.stdout) as { secret: string }).secret, /^whsec_/);

  const deleted = await admin(portal, ['webhook', 'delete', id]);
  assert.equal(deleted.stdout, `deleted webhook ${id}\n`);
  const again = await admin(portal, ['webhook', 'delete', id]);
  assert.equal(again.code, 1);
  assert.equal(again.stderr, `vpn-portal admin: 404 no webhook "${id}"\n`);
  assert.equal((await admin(portal, ['webhook', 'list', '--json'])).stdout, '{"webhooks":[]}\n');
});

test('webhook test exits with 1 when the receiver did not take the event', async (t) => {
  const portal = await startTestPortal({ config: { webhooks: { allowPrivateTargets: ['127.0.0.0/8'] } } });
  t.after(portal.close);
  const receiver = await WebhookReceiver.start(() => 503);
  t.after(() => receiver.close());
  const { webhook } = await portal.admin.createWebhook({ url: receiver.url, event_types: '*' });
  const tested = await admin(portal, ['webhook', 'test', webhook.webhook_id]);
  assert.equal(tested.code, 1);
  assert.match(tested.stdout, /^failed 503 in \d+ ms: receiver error\n$/);
});

test('enrollment-token prints the token alone on its last line; enrollment-tokens lists it; revoke-enrollment-token ends it', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const made = await admin(portal, [
    'enrollment-token',
    'alice',
    'employees',
    '--uses',
    '2',
    '--valid-for',
    'P1D',
    '--display-name',
    'Laptop',
  ]);
  assert.equal(made.code, 0, made.stderr);
  const lines = made.stdout.trimEnd().split('\n');
  const token = lines.at(-1) ?? '';
  assert.match(token, /^vpe_[0-9A-Za-z]{12}_[0-9A-Za-z]{49}$/);
  const tokenId = token.slice(4, 16);
  assert.match(
    lines[0] ?? '',
    new RegExp(`^enrollment token ${tokenId} for alice in employees: 2 uses, until \\d{4}-`),
  );

  const listed = await admin(portal, ['enrollment-tokens', '--user', 'alice']);
  assert.match(listed.stdout, /^TOKEN_ID +USER +PROFILE +STATE +USES_LEFT +EXPIRES +CREATED_BY +LAST_USED\n/);
  assert.match(listed.stdout, new RegExp(`^${tokenId} +alice +employees +usable +2/2 +\\d{4}-\\S+ +secret *$`, 'm'));
  assert.ok(!listed.stdout.includes(token), 'the listing never shows the token');

  const revoked = await admin(portal, ['revoke-enrollment-token', 'alice', tokenId]);
  assert.equal(revoked.stdout, `revoked enrollment token ${tokenId} of alice\n`);
  const json = JSON.parse((await admin(portal, ['enrollment-tokens', '--json'])).stdout) as {
    enrollment_tokens: { state: string }[];
  };
  assert.deepEqual(
    json.enrollment_tokens.map((entry) => entry.state),
    ['revoked'],
  );

  const badUses = await admin(portal, ['enrollment-token', 'alice', 'employees', '--uses', 'many']);
  assert.equal(badUses.code, 2);
  assert.match(badUses.stderr, /--uses: "many" is not a number of uses/);
  const refused = await admin(portal, ['enrollment-token', 'alice', 'employees', '--valid-for', 'P1Y']);
  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    /^vpn-portal admin: 400 invalid value for "valid_for": a duration longer than zero and at most P90D/,
  );
});

test('create -o refuses an existing file before anything is issued; --force replaces it (0600); the connection id goes to stderr', async (t) => {
  const portal = await startTestPortal({ config: { ProfileList: [BOTH_PROTOCOLS_PROFILE] } });
  t.after(portal.close);
  const file = path.join(tempDir(t), 'laptop.conf');
  writeFileSync(file, 'the configuration that still runs\n', { mode: 0o644 });
  const refused = await admin(portal, ['create', 'frank', 'both', '--format', 'wireguard', '-o', file]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /laptop\.conf exists .*pass --force to replace it\nusage: vpn-portal admin create /);
  assert.equal(readFileSync(file, 'utf8'), 'the configuration that still runs\n');
  assert.deepEqual(await portal.admin.users(), [], 'nothing was issued');

  const replaced = await admin(portal, ['create', 'frank', 'both', '--format', 'wireguard', '-o', file, '--force']);
  assert.equal(replaced.code, 0, replaced.stderr);
  assert.match(readFileSync(file, 'utf8'), /^\[Interface\]\nPrivateKey = /);
  assert.equal(statSync(file).mode & 0o777, 0o600, 'the replaced file is 0600 too');
  const [configuration] = await portal.admin.userConfigurationList('frank');
  assert.equal(
    replaced.stderr,
    `issued a new configuration for frank in both: connection id ${configuration?.connection_id ?? '?'}\n`,
  );

  const openVpn = await admin(portal, ['create', 'frank', 'both', '--format', 'openvpn', '--json']);
  assert.equal(openVpn.code, 0, openVpn.stderr);
  const ids = (await portal.admin.userConfigurationList('frank')).map((entry) => entry.connection_id);
  const { connection_id } = JSON.parse(openVpn.stdout) as { connection_id: string };
  assert.ok(ids.includes(connection_id), `${connection_id} in ${ids.join(', ')}`);

  const qr = await admin(portal, ['create', 'frank', 'both', '--qr']);
  assert.equal(qr.code, 0, qr.stderr);
  assert.match(qr.stderr, /^issued a new configuration for frank in both: connection id [A-Za-z0-9+/]{43}=\n$/);
  assert.equal((await portal.admin.userConfigurationList('frank')).length, 3);
});

test('create -o names a place it cannot write (a folder, a missing folder) and issues nothing, with or without --force', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const dir = tempDir(t);
  for (const [output, problem] of [
    [dir, /is a folder: name a file in it/],
    [path.join(dir, 'missing', 'laptop.conf'), /cannot write .*missing\/laptop\.conf: its folder .* does not exist/],
  ] as const) {
    for (const force of [[], ['--force']]) {
      const refused = await admin(portal, ['create', 'heidi', 'employees', '-o', output, ...force]);
      assert.equal(refused.code, 2, refused.stderr);
      assert.match(refused.stderr, problem);
    }
  }
  assert.deepEqual(await portal.admin.users(), [], 'nothing was issued, so no key was lost');
});

test('create -o /dev/null writes into the device: no --force needed, and its mode is left alone', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const modeBefore = statSync('/dev/null').mode;
  const result = await admin(portal, ['create', 'grace', 'employees', '-o', '/dev/null']);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^wrote \/dev\/null \(application\/x-wireguard-profile, expires \d{4}-/);
  assert.equal(statSync('/dev/null').mode, modeBefore, '/dev/null is not made 0600');
  assert.equal((await portal.admin.userConfigurationList('grace')).length, 1);
});

test('a mistyped flag names the nearest option and prints only that command usage; create --help shows create alone', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const mistyped = await admin(portal, ['create', 'alice', 'employees', '--expire-in', 'P90D']);
  assert.equal(mistyped.code, 2);
  const lines = mistyped.stderr.trimEnd().split('\n');
  assert.equal(lines[0], 'vpn-portal admin: unknown option --expire-in (did you mean --expires-in?)');
  assert.match(lines[1] ?? '', /^usage: vpn-portal admin create USER PROFILE /);
  assert.ok(lines.length <= 12, mistyped.stderr);
  assert.doesNotMatch(mistyped.stderr, /positional argument|delete-connection/);
  assert.deepEqual(await portal.admin.users(), []);

  // The suggestion comes from the command's own options: --key-nam is --key-name for audit only.
  assert.match(
    (await admin(portal, ['audit', '--key-nam', 'x'])).stderr,
    /^vpn-portal admin: unknown option --key-nam \(did you mean --key-name\?\)\nusage: vpn-portal admin audit /,
  );
  assert.match(
    (await admin(portal, ['users', '--frobnicate'])).stderr,
    /^vpn-portal admin: unknown option --frobnicate\nusage: vpn-portal admin users /,
  );
  assert.match(
    (await admin(portal, ['users', '--all'])).stderr,
    /^vpn-portal admin: admin users does not take --all\nusage: vpn-portal admin users /,
  );

  const help = await runCli(['admin', 'create', '--help']);
  assert.equal(help.code, 0);
  assert.match(
    help.stdout,
    /^usage: vpn-portal admin create USER PROFILE \[--format wireguard\|wireguard-tcp\|openvpn\|apple\]/,
  );
  assert.match(help.stdout, /--force/);
  assert.doesNotMatch(help.stdout, /delete-connection|enrollment-token/);
  assert.ok(help.stdout.trimEnd().split('\n').length <= 12, help.stdout);
  const webhook = await runCli(['admin', 'webhook', 'deliveries', '--help']);
  assert.match(webhook.stdout, /^usage: vpn-portal admin webhook deliveries \[--webhook ID\]/);
});

test('create --device-id, --serial or --mdm-id issues the configuration for that registered device', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const device = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'linux',
    serial: 'SER-7',
    mdm_id: 'intune-7',
  });
  const connectionOf = async () => (await portal.admin.device(device.device_id)).configurations[0]?.connection_id;

  const bySerial = await admin(portal, ['create', 'alice', 'employees', '--serial', 'SER-7', '--json']);
  assert.equal(bySerial.code, 0, bySerial.stderr);
  const first = (JSON.parse(bySerial.stdout) as { connection_id: string }).connection_id;
  assert.equal(await connectionOf(), first, 'the configuration is the device’s');

  const byMdmId = await admin(portal, ['create', 'alice', 'employees', '--mdm-id', 'intune-7', '--json']);
  assert.equal(byMdmId.code, 0, byMdmId.stderr);
  const second = (JSON.parse(byMdmId.stdout) as { connection_id: string }).connection_id;
  assert.equal(await connectionOf(), second, 'a new one replaces the device’s configuration in the profile');

  const byId = await admin(portal, ['create', 'alice', 'employees', '--device-id', device.device_id, '--json']);
  assert.equal(byId.code, 0, byId.stderr);
  const third = (JSON.parse(byId.stdout) as { connection_id: string }).connection_id;
  assert.equal(await connectionOf(), third);
  assert.equal((await portal.admin.device(device.device_id)).configurations.length, 1);

  const both = await admin(portal, ['create', 'alice', 'employees', '--serial', 'SER-7', '--mdm-id', 'intune-7']);
  assert.equal(both.code, 2);
  assert.match(both.stderr, /name the device by one of --device-id, --serial or --mdm-id, not several/);
  assert.equal(await connectionOf(), third, 'nothing was issued');
  const unknown = await admin(portal, ['create', 'alice', 'employees', '--serial', 'SER-404']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /^vpn-portal admin: 404 /);
  const help = await admin(portal, ['create', '--help']);
  assert.match(help.stdout, /--device-id ID/);
});

test("enrollment-token --serial makes a token whose configuration is that registered device's", async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const device = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'linux',
    serial: 'SER-9',
  });
  const made = await admin(portal, ['enrollment-token', 'alice', 'employees', '--serial', 'SER-9']);
  assert.equal(made.code, 0, made.stderr);
  const token = made.stdout.trimEnd().split('\n').at(-1) ?? '';
  const redeemed = await portal.request(`${portal.portal.url}${portal.portal.ctx.config.basePath}/enroll`, {
    method: 'POST',
    body: new URLSearchParams({ enrollment_token: token, public_key: wgGenkey().publicKey }),
    headers: { accept: 'application/x-wireguard-profile' },
  });
  assert.equal(redeemed.status, 200, redeemed.text);
  assert.equal((await portal.admin.device(device.device_id)).configurations.length, 1, 'the device holds it');

  const both = await admin(portal, [
    'enrollment-token',
    'alice',
    'employees',
    '--serial',
    'SER-9',
    '--device-id',
    device.device_id,
  ]);
  assert.equal(both.code, 2);
  assert.match(
    both.stderr,
    /name the device by one of --device-id, --serial or --mdm-id, not several\nusage: vpn-portal admin enrollment-token /,
  );
  assert.equal((await portal.admin.enrollmentTokens()).length, 1, 'no second token');
});

test('device register, list, show and retire work from the command line, as tables and as JSON', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const registered = await admin(portal, [
    'device',
    'register',
    'alice',
    'employees',
    'macos',
    '--serial',
    'C02XK1',
    '--mdm-id',
    'jamf-7',
  ]);
  assert.equal(registered.code, 0, registered.stderr);
  const id =
    /^registered device (dev_[0-9a-f]{24}) of alice \(macos\) in employees$/m.exec(registered.stdout)?.[1] ?? '';
  assert.notEqual(id, '');
  assert.equal(
    (await portal.post('/create', { user_id: 'alice', profile_id: 'employees', device_id: id })).status,
    200,
  );

  const list = await admin(portal, ['device', 'list', '--platform', 'macos']);
  assert.match(
    list.stdout,
    new RegExp(
      `^DEVICE +USER +PROFILE +PLATFORM +SERIAL +MDM_ID +STATE +IDENTITY +CONFIGURATIONS +LAST_SEEN\\n${id} +alice +employees +macos +C02XK1 +jamf-7 +active +token +1 *\\n$`,
    ),
  );
  const json = JSON.parse((await admin(portal, ['device', 'list', '--json', '--user', 'bob'])).stdout) as {
    devices: unknown[];
    next_cursor: null;
  };
  assert.deepEqual(json, { devices: [], next_cursor: null });
  const shown = await admin(portal, ['device', 'show', id]);
  assert.match(shown.stdout, /^state +active$/m);
  assert.match(shown.stdout, /^configuration +employees wireguard \S+ until /m);

  const retired = await admin(portal, ['device', 'retire', id, '--json']);
  assert.equal(retired.code, 0, retired.stderr);
  const answer = JSON.parse(retired.stdout) as {
    device: { state: string };
    revocation: { revocation_id: string; reason: string; user_id: string };
  };
  assert.equal(answer.device.state, 'retired');
  assert.equal(answer.revocation.user_id, 'alice', 'with its revocation receipt');
  assert.match(answer.revocation.revocation_id, /\S/);
  assert.deepEqual(await portal.admin.userConfigurationList('alice'), []);
  const again = await admin(portal, ['device', 'retire', id]);
  assert.match(again.stdout, new RegExp(`^retired device ${id} at \\S+: nothing to revoke$`, 'm'));
  const second = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'macos',
    serial: 'C02XK2',
  });
  assert.equal(
    (await portal.post('/create', { user_id: 'alice', profile_id: 'employees', device_id: second.device_id })).status,
    200,
  );
  // The test portal's nodes never answer: the receipt stays pending.
  const pending = await admin(portal, ['device', 'retire', second.device_id]);
  assert.match(
    pending.stdout,
    new RegExp(
      `^retired device ${second.device_id} at \\S+: pending: node 0 did not confirm the removal yet \\(revocation \\S+\\)$`,
      'm',
    ),
  );

  const badPlatform = await admin(portal, ['device', 'register', 'alice', 'employees', 'beos', '--serial', 'X']);
  assert.equal(badPlatform.code, 2);
  assert.match(badPlatform.stderr, /PLATFORM must be one of ios, macos, windows, android, linux, other, not "beos"/);
  const taken = await admin(portal, ['device', 'register', 'bob', 'employees', 'ios', '--serial', 'C02XK1']);
  assert.equal(taken.code, 0, 'a retired device’s serial may be registered again');
  const conflict = await admin(portal, ['device', 'register', 'carol', 'employees', 'ios', '--serial', 'C02XK1']);
  assert.equal(conflict.code, 1);
  assert.match(conflict.stderr, /^vpn-portal admin: 409 "serial" is already registered to another user's device/);
});

test('device suspend and resume work from the command line: the receipt, the reason, and the device back', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const device = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'linux',
    serial: 'SUS-1',
  });
  const id = device.device_id;
  assert.equal(
    (await portal.post('/create', { user_id: 'alice', profile_id: 'employees', device_id: id })).status,
    200,
  );
  // The test portal's nodes never answer: the receipt stays pending.
  const suspended = await admin(portal, ['device', 'suspend', id, '--reason', 'lost on a train']);
  assert.equal(suspended.code, 0, suspended.stderr);
  assert.match(
    suspended.stdout,
    new RegExp(
      `^suspended device ${id} \\(lost on a train\\) since \\S+: pending: node 0 did not confirm the removal yet \\(revocation \\S+\\)$`,
      'm',
    ),
  );
  const shown = await admin(portal, ['device', 'show', id]);
  assert.match(shown.stdout, /^state +suspended$/m);
  assert.match(shown.stdout, /^suspended +lost on a train, since \S+, by secret$/m);
  const again = JSON.parse((await admin(portal, ['device', 'suspend', id, '--json'])).stdout) as {
    device: { suspension: { reason: string } };
    revocation: { reason: string };
  };
  assert.equal(again.device.suspension.reason, 'lost on a train', 'suspended already: unchanged');
  assert.equal(again.revocation.reason, 'suspend_device');

  const resumed = await admin(portal, ['device', 'resume', id]);
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.equal(resumed.stdout.trim(), `device ${id} is active`);
  const badReason = await admin(portal, ['device', 'suspend', id, '--reason', '']);
  assert.equal(badReason.code, 1);
  assert.match(badReason.stderr, /^vpn-portal admin: 400 .*reason/);
  const notTaken = await admin(portal, ['device', 'resume', id, '--reason', 'x']);
  assert.equal(notTaken.code, 2);
  assert.match(notTaken.stderr, /admin device resume does not take --reason/);
  assert.equal((await portal.admin.device(id)).state, 'active');
});
