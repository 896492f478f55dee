// POST /create with an OpenVPN profile: the administrator gets a client file whose
// certificate chains to the portal's CA (checked with `openssl verify`), named by the
// configuration's connection_id, expiring with it and never after the CA; the protocol is
// chosen as the reference does; and the Node API tells a node whom to let in.
import assert from 'node:assert/strict';
import { serverConfigAnswerSchema } from '../../../src/protocol/node-api.js';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import type { Clock } from '../../../src/shared/time.js';
import { connectionHistory } from '../../../src/storage/connection-log.js';
import { startTestPortal, UNREACHABLE_NODE, type TestPortal } from '../../support/test-portal.js';

const OPENVPN = 'application/x-openvpn-profile';
const WIREGUARD = 'application/x-wireguard-profile';

type ProfileFile = PortalConfigFile['ProfileList'][number];

const staff: ProfileFile = {
  profileId: 'staff',
  displayName: 'Staff',
  hostName: 'vpn.example.org',
  oRangeFour: '10.60.0.0/24',
  oRangeSix: 'fd60::/64',
  nodeUrl: UNREACHABLE_NODE,
};
const both: ProfileFile = {
  ...staff,
  profileId: 'both',
  oRangeFour: '10.61.0.0/24',
  oRangeSix: 'fd61::/64',
  wRangeFour: '10.62.0.0/29',
  wRangeSix: 'fd62::/64',
};
const wireGuardOnly: ProfileFile = {
  profileId: 'wg',
  displayName: 'WireGuard',
  hostName: 'vpn.example.org',
  wRangeFour: '10.63.0.0/24',
  wRangeSix: 'fd63::/64',
  nodeUrl: UNREACHABLE_NODE,
};

interface ConfigurationEntry {
  connection_id: string;
  profile_id: string;
  display_name: string;
  expires_at: string;
  vpn_proto: string;
}

function startPortal(
  t: { after: (fn: () => Promise<void>) => void },
  options: { clock?: Clock; config?: Partial<PortalConfigFile> } = {},
): Promise<TestPortal> {
  return startTestPortal({
    config: { ProfileList: [staff, both, wireGuardOnly], ...options.config },
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  }).then((portal) => {
    t.after(() => portal.close());
    return portal;
  });
}

async function configurationsOf(portal: TestPortal, userId: string): Promise<ConfigurationEntry[]> {
  return portal.admin.userConfigurationList(userId);
}

/** The PEM between `<tag>` and `</tag>` of an OpenVPN file. */
function inlineBlock(file: string, tag: string): string {
  const match = new RegExp(`<${tag}>\\n([\\s\\S]*?)\\n</${tag}>`).exec(file);
  assert.ok(match !== null, `the file has a <${tag}> block`);
  return match[1] ?? '';
}

/** Runs openssl on a certificate and returns its output. */
function openssl(directory: string, certificatePem: string, args: readonly string[]): string {
  const file = path.join(directory, `cert-${Math.random().toString(36).slice(2)}.pem`);
  writeFileSync(file, `${certificatePem}\n`);
  return execFileSync('openssl', [...args, file], { encoding: 'utf8' });
}

test('an OpenVPN file from /create carries a certificate of the portal CA, named by its connection_id and expiring with it', async (t) => {
  const portal = await startPortal(t);
  const directory = mkdtempSync(path.join(tmpdir(), 'openvpn-create-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));

  const created = await portal.post(
    '/create',
    { user_id: 'alice', profile_id: 'staff', display_name: 'Laptop' },
    { accept: OPENVPN },
  );
  assert.equal(created.status, 200, created.text);
  assert.equal(created.headers.get('content-type'), OPENVPN);
  assert.match(created.text, /^dev tun\nclient\nnobind\nremote-cert-tls server\n/);
  assert.match(created.text, /\nremote vpn\.example\.org 1194 udp\nremote vpn\.example\.org 1194 tcp$/);
  // No comment lines (only the tls-crypt key's own framing starts with #).
  assert.doesNotMatch(created.text, /^# (Portal|Profile|Expires):/m, 'no comment lines');

  const [configuration] = await configurationsOf(portal, 'alice');
  assert.ok(configuration !== undefined, 'user_configuration_list lists the configuration');
  assert.equal(configuration.vpn_proto, 'openvpn');
  assert.equal(configuration.display_name, 'Laptop');
  assert.equal(
    Buffer.from(configuration.connection_id, 'base64').length,
    32,
    'the connection_id is Base64 of 32 bytes',
  );

  // The CA in the file is the portal's; the client certificate chains to it.
  const caFile = path.join(portal.dataDir, 'keys', 'ca', 'ca.crt');
  assert.equal(inlineBlock(created.text, 'ca'), readFileSync(caFile, 'utf8').trim());
  const certificate = inlineBlock(created.text, 'cert');
  const clientFile = path.join(directory, 'client.pem');
  writeFileSync(clientFile, `${certificate}\n`);
  assert.match(
    execFileSync('openssl', ['verify', '-CAfile', caFile, '-purpose', 'sslclient', clientFile], { encoding: 'utf8' }),
    /: OK/,
  );

  const subject = openssl(directory, certificate, ['x509', '-noout', '-subject', '-nameopt', 'RFC2253', '-in']).trim();
  assert.equal(subject.replace(/\\(.)/g, '$1'), `subject=CN=${configuration.connection_id},OU=staff`);
  const notAfter = openssl(directory, certificate, ['x509', '-noout', '-enddate', '-in'])
    .trim()
    .replace('notAfter=', '');
  assert.equal(
    new Date(notAfter).toISOString(),
    new Date(configuration.expires_at).toISOString(),
    'the certificate expires with the configuration',
  );
  assert.equal(
    new Date(created.headers.get('expires') ?? '').toISOString(),
    new Date(configuration.expires_at).toISOString(),
  );
  assert.match(inlineBlock(created.text, 'key'), /^-----BEGIN PRIVATE KEY-----/);
  assert.match(inlineBlock(created.text, 'tls-crypt'), /-----BEGIN OpenVPN Static key V1-----/);
});

test("no configuration expires after the CA: expiry is capped by the CA's notAfter, for OpenVPN and WireGuard alike", async (t) => {
  // A CA made with a 30-day lifetime, and configurations meant to last 90 days.
  const portal = await startPortal(t, { config: { caExpiry: 'P30D', sessionExpiry: 'P90D' } });
  const caFile = path.join(portal.dataDir, 'keys', 'ca', 'ca.crt');
  const caNotAfter = new Date(
    execFileSync('openssl', ['x509', '-noout', '-enddate', '-in', caFile], { encoding: 'utf8' })
      .trim()
      .replace('notAfter=', ''),
  );
  const daysLeft = (caNotAfter.getTime() - Date.now()) / 86_400_000;
  assert.ok(daysLeft > 29 && daysLeft <= 30, `the CA lives 30 days (${daysLeft})`);

  for (const [profileId, accept] of [
    ['staff', OPENVPN],
    ['wg', WIREGUARD],
  ] as const) {
    const created = await portal.post('/create', { user_id: 'bob', profile_id: profileId }, { accept });
    assert.equal(created.status, 200, created.text);
    assert.equal(
      new Date(created.headers.get('expires') ?? '').getTime(),
      Math.floor(caNotAfter.getTime() / 1000) * 1000,
      `${profileId}: Expires is the CA's end`,
    );
  }
  for (const entry of await configurationsOf(portal, 'bob')) {
    assert.equal(
      new Date(entry.expires_at).getTime(),
      caNotAfter.getTime(),
      `${entry.vpn_proto}: expires_at is the CA's end`,
    );
  }
});

test('the protocol follows Accept and the profile: OpenVPN first by default, 406 for a protocol the profile lacks', async (t) => {
  const portal = await startPortal(t);
  const contentTypeOf = async (profileId: string, headers: Record<string, string>) => {
    const created = await portal.post('/create', { user_id: 'carol', profile_id: profileId }, headers);
    return created.status === 200 ? created.headers.get('content-type') : created.status;
  };
  assert.equal(await contentTypeOf('both', {}), OPENVPN, "no Accept: the profile's preferred protocol, OpenVPN");
  assert.equal(await contentTypeOf('both', { accept: WIREGUARD }), WIREGUARD);
  assert.equal(await contentTypeOf('staff', { accept: WIREGUARD }), 406);
  assert.equal(await contentTypeOf('wg', { accept: OPENVPN }), 406);
  const refused = await portal.post('/create', { user_id: 'carol', profile_id: 'wg' }, { accept: OPENVPN });
  assert.deepEqual(refused.json(), {
    error: `no common VPN protocol [CLIENT=${OPENVPN} SERVER=${WIREGUARD},application/x-apple-aspen-config]`,
  });
});

test('when no node has a free WireGuard address, create falls back to OpenVPN if the client accepts it', async (t) => {
  const portal = await startPortal(t, { config: { ProfileList: [{ ...both, preferredProto: 'wireguard' }] } });
  const types: (string | null)[] = [];
  // A /29 holds 5 WireGuard clients (network, gateway and broadcast are never handed out).
  for (let index = 0; index < 7; index++) {
    const created = await portal.post('/create', { user_id: 'dave', profile_id: 'both' });
    assert.equal(created.status, 200, created.text);
    types.push(created.headers.get('content-type'));
  }
  assert.deepEqual(types, [WIREGUARD, WIREGUARD, WIREGUARD, WIREGUARD, WIREGUARD, OPENVPN, OPENVPN]);
  const full = await portal.post('/create', { user_id: 'dave', profile_id: 'both' }, { accept: WIREGUARD });
  assert.equal(full.status, 503, 'a client that only takes WireGuard gets 503 when the pool is full');
});

test('delete_connection and destroy remove OpenVPN configurations too', async (t) => {
  const portal = await startPortal(t);
  for (const name of ['One', 'Two'])
    assert.equal(
      (await portal.post('/create', { user_id: 'erin', profile_id: 'staff', display_name: name }, { accept: OPENVPN }))
        .status,
      200,
    );
  const [first, second] = await configurationsOf(portal, 'erin');
  assert.ok(first !== undefined && second !== undefined, 'two configurations');
  assert.equal(
    (await portal.post('/delete_connection', { user_id: 'erin', connection_id: first.connection_id })).status,
    204,
  );
  assert.deepEqual(
    (await configurationsOf(portal, 'erin')).map((entry) => entry.connection_id),
    [second.connection_id],
  );
  assert.equal((await portal.post('/destroy', { user_id: 'erin' })).status, 204);
  assert.equal((await portal.get('/user_configuration_list', { user_id: 'erin' })).status, 400);
});

test('the Node API lets a client in only for a live configuration of that profile, node and an enabled user, and logs the connection', async (t) => {
  let now = new Date();
  const portal = await startPortal(t, { clock: { now: () => now } });
  const nodeSecret = portal.portal.ctx.keys.nodeSecret(asNodeNumber(0)) ?? '';
  const nodeApi = (call: string, form: Record<string, string>, nodeNumber = '0') =>
    portal.request(`${portal.nodeApiUrl}/${call}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${nodeSecret}`, 'x-node-number': nodeNumber },
      body: new URLSearchParams(form),
    });
  assert.equal(
    (await portal.post('/create', { user_id: 'frank', profile_id: 'staff', expires_in: 'PT12H' }, { accept: OPENVPN }))
      .status,
    200,
  );
  const [configuration] = await configurationsOf(portal, 'frank');
  assert.ok(configuration !== undefined, 'a configuration exists');
  const connect = (overrides: Record<string, string> = {}, nodeNumber = '0') =>
    nodeApi(
      'connect',
      {
        profile_id: 'staff',
        common_name: configuration.connection_id,
        originating_ip: '192.0.2.7',
        ip_four: '10.60.0.2',
        ip_six: 'fd60::1000',
        ...overrides,
      },
      nodeNumber,
    ).then((response) => `${response.status} ${response.text}`);

  const disconnect = (bytes: string) =>
    nodeApi('disconnect', {
      profile_id: 'staff',
      common_name: configuration.connection_id,
      ip_four: '10.60.0.2',
      ip_six: 'fd60::1000',
      bytes_in: bytes,
      bytes_out: bytes,
    }).then((response) => `${response.status} ${response.text}`);

  assert.equal(await connect(), '200 OK');
  assert.equal(await disconnect('1234'), '200 OK');
  assert.equal(
    await connect({ profile_id: 'both', ip_four: '10.61.0.2', ip_six: 'fd61::1000' }),
    '200 ERR',
    'another profile (addresses of its own range, as its process hands out)',
  );
  assert.equal(
    await connect({ common_name: Buffer.alloc(32, 7).toString('base64') }),
    '200 ERR',
    'an unknown certificate',
  );
  assert.equal(await connect({ common_name: 'not base64' }), '400 {"error":"invalid value for \\"common_name\\""}');
  assert.equal((await nodeApi('connect', { profile_id: 'staff' }, '0')).status, 400);
  const wrongKey = await portal.request(`${portal.nodeApiUrl}/connect`, {
    method: 'POST',
    headers: { authorization: 'Bearer nope', 'x-node-number': '0' },
    body: new URLSearchParams({ profile_id: 'staff' }),
  });
  assert.equal(wrongKey.status, 401);

  assert.equal((await portal.post('/disable_user', { user_id: 'frank' })).status, 204);
  assert.equal(await connect(), '200 ERR', 'a disabled user');
  assert.equal((await portal.post('/enable_user', { user_id: 'frank' })).status, 204);
  assert.equal(await connect(), '200 OK', 'enabled again');
  // A renegotiating client is asked about again: still one connection, not a new one.
  assert.equal(await connect({ reauth: 'yes' }), '200 OK', 'the same connection after a TLS renegotiation');
  assert.equal(await disconnect('5678'), '200 OK');

  const history = await connectionHistory(portal.portal.ctx.db, configuration.connection_id);
  assert.deepEqual(
    history.map((entry) => [entry.bytesIn, entry.disconnectedAt !== null]),
    [
      [1234, true],
      [5678, true],
    ],
    'two connections were logged and closed with their byte counts; refused connects left no entry',
  );

  now = new Date(now.getTime() + 13 * 3600_000);
  assert.equal(await connect(), '200 ERR', 'an expired configuration');
});

test('an OpenVPN client that reconnects before its old session ends keeps its new session open when the old one closes', async (t) => {
  const portal = await startPortal(t);
  const nodeSecret = portal.portal.ctx.keys.nodeSecret(asNodeNumber(0)) ?? '';
  const nodeApi = (call: string, form: Record<string, string>) =>
    portal
      .request(`${portal.nodeApiUrl}/${call}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${nodeSecret}`, 'x-node-number': '0' },
        body: new URLSearchParams(form),
      })
      .then((response) => `${response.status} ${response.text}`);
  await portal.post('/create', { user_id: 'gina', profile_id: 'staff' }, { accept: OPENVPN });
  const [configuration] = await configurationsOf(portal, 'gina');
  assert.ok(configuration !== undefined, 'a configuration exists');
  const session = (ipFour: string) => ({
    profile_id: 'staff',
    common_name: configuration.connection_id,
    ip_four: ipFour,
    ip_six: 'fd60::1000',
  });

  // The laptop changed networks: OpenVPN connects it again, with a new tunnel address, before
  // the server has timed out the old connection.
  assert.equal(await nodeApi('connect', { ...session('10.60.0.2'), originating_ip: '192.0.2.7' }), '200 OK');
  assert.equal(await nodeApi('connect', { ...session('10.60.0.3'), originating_ip: '198.51.100.9' }), '200 OK');
  assert.equal(await nodeApi('disconnect', { ...session('10.60.0.2'), bytes_in: '11', bytes_out: '12' }), '200 OK');

  // Both started within the same second: sorted by address, not by time.
  const byAddress = <T extends { readonly ipFour: string }>(entries: T[]) =>
    [...entries].sort((a, b) => a.ipFour.localeCompare(b.ipFour));
  const history = byAddress(await connectionHistory(portal.portal.ctx.db, configuration.connection_id));
  assert.deepEqual(
    history.map((entry) => [entry.ipFour, entry.bytesIn, entry.disconnectedAt !== null]),
    [
      ['10.60.0.2', 11, true],
      ['10.60.0.3', null, false],
    ],
    'the old session closed with its bytes; the new one is still open',
  );

  assert.equal(await nodeApi('disconnect', { ...session('10.60.0.3'), bytes_in: '21', bytes_out: '22' }), '200 OK');
  const after = byAddress(await connectionHistory(portal.portal.ctx.db, configuration.connection_id));
  assert.deepEqual(
    after.map((entry) => [entry.ipFour, entry.bytesIn]),
    [
      ['10.60.0.2', 11],
      ['10.60.0.3', 21],
    ],
    'each session has its own byte counts',
  );
});

test('the Node API hands a node one OpenVPN server file per port of each of its OpenVPN profiles', async (t) => {
  const portal = await startPortal(t);
  const nodeSecret = portal.portal.ctx.keys.nodeSecret(asNodeNumber(0)) ?? '';
  const serverConfig = (form: Record<string, string>) =>
    portal.request(`${portal.nodeApiUrl}/server_config`, {
      method: 'POST',
      headers: { authorization: `Bearer ${nodeSecret}`, 'x-node-number': '0' },
      body: new URLSearchParams(form),
    });
  const answer = await serverConfig({
    vpn_user: 'openvpn',
    vpn_group: 'openvpn',
    prefer_aes: 'no',
    management_dir: '/run/vpn-node',
  });
  assert.equal(answer.status, 200, answer.text);
  const files = serverConfigAnswerSchema.parse(answer.json()).openvpn ?? [];
  assert.deepEqual(
    files.map((file) => [file.name, file.proto, file.port]),
    [
      ['staff-0.conf', 'udp', 1194],
      ['staff-1.conf', 'tcp', 1194],
      ['both-0.conf', 'udp', 1194],
      ['both-1.conf', 'tcp', 1194],
    ],
  );
  const [first] = files;
  assert.ok(first !== undefined, 'a file');
  assert.match(first.content, /\nuser openvpn\ngroup openvpn\n/);
  assert.match(first.content, /\ndata-ciphers CHACHA20-POLY1305:AES-256-GCM\n/);
  assert.match(first.content, /\nmanagement \/run\/vpn-node\/staff-0\.sock unix\n/);
  assert.match(first.content, /\nmanagement-client-auth\n/);
  assert.doesNotMatch(first.content, /client-connect|script-security/);
  // The same file every time: a node agent restarts a process only when its file changes.
  const again = serverConfigAnswerSchema.parse(
    (
      await serverConfig({
        vpn_user: 'openvpn',
        vpn_group: 'openvpn',
        prefer_aes: 'no',
        management_dir: '/run/vpn-node',
      })
    ).json(),
  );
  assert.deepEqual(
    again.openvpn?.map((file) => file.content),
    files.map((file) => file.content),
  );

  for (const bad of [
    { vpn_user: 'no body' },
    { management_dir: 'relative/dir' },
    { management_dir: '/run/../etc' },
    { prefer_aes: 'maybe' },
  ] as Record<string, string>[]) {
    const refused = await serverConfig(bad);
    assert.equal(refused.status, 400, `${JSON.stringify(bad)} is refused: ${refused.text}`);
  }
});
