// POST /create for a device that keeps its own key: `public_key` (WireGuard) and `csr`
// (OpenVPN). The portal stores and certifies only the public half: the WireGuard file leaves
// its PrivateKey to the device, the OpenVPN file has no key at all, and a retry with the same
// Idempotency-Key gets the same keyless file. Keys that are not usable X25519 points, keys in
// use anywhere, CSRs of other key types or with a wrong signature are refused and change nothing.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { DEVICE_PRIVATE_KEY_PLACEHOLDER } from '../../../src/wireguard/client-config.js';
import { portalState } from '../../support/admin-keys.js';
import {
  ABOVE_FIELD_PRIME_KEY,
  bit255Twin,
  BOTH_PROTOCOLS_PROFILE,
  NON_CANONICAL,
  opensslCsr,
  wgGenkey,
} from '../../support/device-keys.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

const WIREGUARD = 'application/x-wireguard-profile';
const WIREGUARD_TCP = 'application/x-wireguard+tcp-profile';
const OPENVPN = 'application/x-openvpn-profile';
const APPLE = 'application/x-apple-aspen-config';

/** One profile with WireGuard and OpenVPN, WireGuard over TCP enabled. */
const config: Partial<PortalConfigFile> = {
  WireGuard: { enableProxy: true },
  ProfileList: [BOTH_PROTOCOLS_PROFILE],
};

async function startPortal(t: { after: (fn: () => Promise<void>) => void }): Promise<TestPortal> {
  const portal = await startTestPortal({ config });
  t.after(() => portal.close());
  return portal;
}

/** The PEM between `<tag>` and `</tag>` of an OpenVPN file. */
function inlineBlock(file: string, tag: string): string {
  const match = new RegExp(`<${tag}>\\n([\\s\\S]*?)\\n</${tag}>`).exec(file);
  assert.ok(match !== null, `the file has a <${tag}> block`);
  return match[1] ?? '';
}

test('with public_key the portal stores and lists that key and the file leaves PrivateKey to the device', async (t) => {
  const portal = await startPortal(t);
  const device = wgGenkey();
  for (const accept of [WIREGUARD, WIREGUARD_TCP]) {
    const key = accept === WIREGUARD ? device : wgGenkey();
    const created = await portal.post(
      '/create',
      { user_id: 'alice', profile_id: 'both', public_key: key.publicKey },
      { accept },
    );
    assert.equal(created.status, 200, created.text);
    assert.equal(created.headers.get('content-type'), accept);
    const file = parseWireGuardFile(created.text);
    assert.equal(file.interface.get('PrivateKey'), DEVICE_PRIVATE_KEY_PLACEHOLDER);
    assert.equal(
      DEVICE_PRIVATE_KEY_PLACEHOLDER,
      '@DEVICE_PRIVATE_KEY@',
      'the form docs/enrollment-and-devices.md documents',
    );
    assert.match(created.text, /^\[Interface\]\nPrivateKey = @DEVICE_PRIVATE_KEY@\nAddress = /);
  }
  const listed = await portal.admin.userConfigurationList('alice');
  assert.ok(
    listed.some((entry) => entry.connection_id === device.publicKey && entry.vpn_proto === 'wireguard'),
    'the device key is the connection id',
  );
  const row = await portal.portal.ctx.db
    .selectFrom('wg_peers')
    .selectAll()
    .where('public_key', '=', device.publicKey)
    .executeTakeFirst();
  assert.ok(row !== undefined, 'the peer row holds the device key');
  const rows = JSON.stringify(await portal.portal.ctx.db.selectFrom('wg_peers').selectAll().execute());
  assert.ok(!rows.includes(device.privateKey), 'the private key was never given, so never stored');
});

test('a retry with the same Idempotency-Key gets the same keyless file, and a different key is another request', async (t) => {
  const portal = await startPortal(t);
  const device = wgGenkey();
  const form = { user_id: 'alice', profile_id: 'both', public_key: device.publicKey };
  const first = await portal.post('/create', form, { accept: WIREGUARD, 'idempotency-key': 'enroll-1' });
  const again = await portal.post('/create', form, { accept: WIREGUARD, 'idempotency-key': 'enroll-1' });
  assert.equal(first.status, 200, first.text);
  assert.equal(again.status, 200, again.text);
  assert.equal(again.text, first.text, 'the same answer, still without a private key');
  assert.equal(parseWireGuardFile(again.text).interface.get('PrivateKey'), DEVICE_PRIVATE_KEY_PLACEHOLDER);
  const other = await portal.post(
    '/create',
    { ...form, public_key: wgGenkey().publicKey },
    { accept: WIREGUARD, 'idempotency-key': 'enroll-1' },
  );
  assert.equal(other.status, 422, other.text);
  assert.equal((await portal.admin.userConfigurationList('alice')).length, 1);
});

test("a public_key that is not a usable X25519 key is refused with the reference's parameter error and changes nothing", async (t) => {
  const portal = await startPortal(t);
  const before = await portalState(portal);
  const zero = Buffer.alloc(32).toString('base64');
  const one = Buffer.concat([Buffer.from([1]), Buffer.alloc(31)]).toString('base64');
  // A point of order 8 (from the list of small-order points every X25519 implementation must refuse).
  const orderEight = Buffer.from('e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800', 'hex').toString(
    'base64',
  );
  for (const bad of [
    zero,
    one,
    orderEight,
    'not a key',
    `${wgGenkey().publicKey}\n`,
    Buffer.alloc(31, 7).toString('base64'),
  ]) {
    const response = await portal.post(
      '/create',
      { user_id: 'alice', profile_id: 'both', public_key: bad },
      { accept: WIREGUARD },
    );
    assert.equal(response.status, 400, `${JSON.stringify(bad)}: ${response.text}`);
    assert.equal(errorBody(response.text), 'invalid value for "public_key"');
  }
  assert.deepEqual(await portalState(portal), before);
});

test('a public_key in a non-canonical encoding (the bit-255 twin of a key, or a value of 2^255 − 19 or more) is refused with the reason', async (t) => {
  const portal = await startPortal(t);
  const device = wgGenkey();
  assert.equal(
    (
      await portal.post(
        '/create',
        { user_id: 'alice', profile_id: 'both', public_key: device.publicKey },
        { accept: WIREGUARD },
      )
    ).status,
    200,
  );
  const before = await portalState(portal);
  for (const bad of [bit255Twin(device.publicKey), bit255Twin(wgGenkey().publicKey), ABOVE_FIELD_PRIME_KEY]) {
    const response = await portal.post(
      '/create',
      { user_id: 'mallory', profile_id: 'both', public_key: bad },
      { accept: WIREGUARD },
    );
    assert.equal(response.status, 400, `${bad}: ${response.text}`);
    assert.equal(errorBody(response.text), `invalid value for "public_key": ${NON_CANONICAL}`);
  }
  assert.deepEqual(await portalState(portal), before, 'no second configuration for the same point');
});

test('a public_key already used by a configuration of anyone, or by a node, is refused with 409', async (t) => {
  const portal = await startPortal(t);
  const device = wgGenkey();
  assert.equal(
    (
      await portal.post(
        '/create',
        { user_id: 'alice', profile_id: 'both', public_key: device.publicKey },
        { accept: WIREGUARD },
      )
    ).status,
    200,
  );
  const before = await portalState(portal);
  const nodeKey = portal.portal.ctx.keys.wireGuardPublicKey(asNodeNumber(0));
  assert.ok(nodeKey !== null);
  const attempts: readonly (readonly [string, string])[] = [
    ['alice', device.publicKey],
    ['bob', device.publicKey],
    ['bob', nodeKey],
  ];
  for (const [userId, publicKey] of attempts) {
    const response = await portal.post(
      '/create',
      { user_id: userId, profile_id: 'both', public_key: publicKey },
      { accept: WIREGUARD },
    );
    assert.equal(response.status, 409, response.text);
    assert.equal(errorBody(response.text), '"public_key" is already in use');
  }
  assert.deepEqual(await portalState(portal), before, 'not even user bob was made');
});

test('two creates with one new public_key at the same time: one configuration, one 409', async (t) => {
  const portal = await startPortal(t);
  const device = wgGenkey();
  const responses = await Promise.all(
    ['alice', 'bob', 'carol', 'dave'].map((userId) =>
      portal.post(
        '/create',
        { user_id: userId, profile_id: 'both', public_key: device.publicKey },
        { accept: WIREGUARD },
      ),
    ),
  );
  assert.deepEqual(
    responses.map((response) => response.status).sort(),
    [200, 409, 409, 409],
    responses.map((response) => response.text).join('\n'),
  );
  const rows = await portal.portal.ctx.db.selectFrom('wg_peers').select('user_id').execute();
  assert.equal(rows.length, 1);
  assert.equal((await portal.admin.users()).length, 1, 'the refused requests made no user');
});

test('the Apple profile and OpenVPN cannot be made from a WireGuard public key: 406 says why', async (t) => {
  const portal = await startPortal(t);
  const before = await portalState(portal);
  for (const accept of [APPLE, OPENVPN]) {
    const response = await portal.post(
      '/create',
      { user_id: 'alice', profile_id: 'both', public_key: wgGenkey().publicKey },
      { accept },
    );
    assert.equal(response.status, 406, response.text);
    assert.equal(
      errorBody(response.text),
      `no common VPN protocol [CLIENT=${accept} SERVER=${WIREGUARD},${WIREGUARD_TCP}]; with a device's own key the portal makes only the files that need no private key: ` +
        '"public_key" gives the WireGuard files (not the Apple profile, which must carry the private key), "csr" the OpenVPN file',
    );
  }
  // Without an Accept header the first WireGuard format is chosen, never the Apple profile.
  const plain = await portal.post('/create', {
    user_id: 'alice',
    profile_id: 'both',
    public_key: wgGenkey().publicKey,
  });
  assert.equal(plain.status, 200, plain.text);
  assert.equal(plain.headers.get('content-type'), WIREGUARD);
  assert.notDeepEqual(await portalState(portal), before);
});

for (const kind of ['Ed25519', 'P-256'] as const) {
  test(`with a ${kind} csr the portal certifies the device's key under its own CN and OU, and the file carries no key`, async (t) => {
    const portal = await startPortal(t);
    const device = opensslCsr(kind, '/CN=chosen-by-the-device/OU=not-a-profile');
    const created = await portal.post(
      '/create',
      { user_id: 'alice', profile_id: 'both', csr: device.csrPem },
      { accept: OPENVPN },
    );
    assert.equal(created.status, 200, created.text);
    assert.equal(created.headers.get('content-type'), OPENVPN);
    assert.doesNotMatch(created.text, /<key>|PRIVATE KEY/, 'no private key in the file');
    const [configuration] = await portal.admin.userConfigurationList('alice');
    assert.ok(configuration !== undefined);
    const certificate = new X509Certificate(inlineBlock(created.text, 'cert'));
    assert.equal(
      certificate.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      device.publicKeyPem,
      "the certificate holds the device's key",
    );
    // Node escapes `+` in a distinguished name.
    assert.equal(
      certificate.subject.replace(/\\(.)/g, '$1'),
      `OU=both\nCN=${configuration.connection_id}`,
      "the portal's subject, not the CSR's",
    );
    assert.ok(certificate.checkIssued(new X509Certificate(inlineBlock(created.text, 'ca'))), 'issued by the portal CA');
    const row = await portal.portal.ctx.db.selectFrom('certificates').selectAll().executeTakeFirstOrThrow();
    assert.equal(
      row.public_key,
      certificate.publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
      'the key is kept for /extend',
    );
  });
}

test('a csr of another key type, with a wrong signature or that is no CSR is refused with 400 saying why, and changes nothing', async (t) => {
  const portal = await startPortal(t);
  const before = await portalState(portal);
  const good = opensslCsr('P-256').csrPem;
  // Another key's public key put into the request: the signature no longer matches.
  const body = Buffer.from(good.replace(/-----[^-]+-----/g, '').replace(/\s/g, ''), 'base64');
  const other = Buffer.from(
    opensslCsr('P-256')
      .csrPem.replace(/-----[^-]+-----/g, '')
      .replace(/\s/g, ''),
    'base64',
  );
  const keyAt = (der: Buffer) => der.indexOf(Buffer.from('2a8648ce3d030107', 'hex')) + 8;
  const forged = Buffer.from(body);
  other.copy(forged, keyAt(body), keyAt(other), keyAt(other) + 68);
  const forgedPem = `-----BEGIN CERTIFICATE REQUEST-----\n${forged.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
  const cases: [string, string][] = [
    [
      opensslCsr('RSA').csrPem,
      'invalid value for "csr": its key is RSA 2048; only Ed25519 and P-256 keys are accepted',
    ],
    [
      opensslCsr('P-384').csrPem,
      'invalid value for "csr": its key is ECDSA P-384; only Ed25519 and P-256 keys are accepted',
    ],
    [forgedPem, 'invalid value for "csr": its signature does not match its key'],
    ['hello', 'invalid value for "csr": not a PEM certificate request (-----BEGIN CERTIFICATE REQUEST-----)'],
    [
      '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n',
      'invalid value for "csr": not a PKCS#10 certificate request',
    ],
  ];
  for (const [csr, message] of cases) {
    const response = await portal.post('/create', { user_id: 'alice', profile_id: 'both', csr }, { accept: OPENVPN });
    assert.equal(response.status, 400, response.text);
    assert.equal(errorBody(response.text), message);
  }
  assert.deepEqual(await portalState(portal), before);
});

test('with both public_key and csr the negotiation picks the format and uses the matching key', async (t) => {
  const portal = await startPortal(t);
  const form = {
    user_id: 'alice',
    profile_id: 'both',
    public_key: wgGenkey().publicKey,
    csr: opensslCsr('Ed25519').csrPem,
  };
  const openVpn = await portal.post('/create', form, { accept: `${OPENVPN}, ${WIREGUARD};q=0.5` });
  assert.equal(openVpn.headers.get('content-type'), OPENVPN, openVpn.text);
  assert.doesNotMatch(openVpn.text, /PRIVATE KEY/);
  const wireGuard = await portal.post('/create', form, { accept: WIREGUARD });
  assert.equal(parseWireGuardFile(wireGuard.text).interface.get('PrivateKey'), DEVICE_PRIVATE_KEY_PLACEHOLDER);
  // The CSR is recorded in the audit log by its length and digest, not as sent.
  const entries = await portal.admin.auditLog({ user_id: 'alice' });
  assert.match(entries.audit_log[0]?.parameters['csr'] ?? '', /^\[\d+ characters, SHA-256 [0-9a-f]{64}\]$/);
});
