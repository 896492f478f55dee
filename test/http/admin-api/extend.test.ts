// POST /extend: a configuration's expiry moves by create's rules (sessionExpiry or a
// supportedSessionExpiry entry from now, capped by the CA's end and by the end of the certificate
// a device enrolled with) without a new key; an OpenVPN configuration made from a CSR gets a new
// certificate for the same key, one whose key the portal made is refused. Never shorter, never for an expired configuration, never for
// someone else's; each refusal says why and changes nothing, and the change is in the audit log.
import assert from 'node:assert/strict';
import { type KeyObject, X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { formatAtom } from '../../../src/shared/time.js';
import { portalState } from '../../support/admin-keys.js';
import { enrollOverTls, MdmCa, tlsEnrollUrl } from '../../support/mdm-ca.js';
import { BOTH_PROTOCOLS_PROFILE, opensslCsr, wgGenkey } from '../../support/device-keys.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const WIREGUARD = 'application/x-wireguard-profile';
const OPENVPN = 'application/x-openvpn-profile';
const DAY = 86_400_000;

const config: Partial<PortalConfigFile> = {
  sessionExpiry: 'P90D',
  supportedSessionExpiry: ['P1D', 'P30D'],
  ProfileList: [BOTH_PROTOCOLS_PROFILE],
};

interface Stand {
  readonly portal: TestPortal;
  /** The portal's clock, whole seconds; tests move it. */
  now: Date;
}

async function start(
  t: { after: (fn: () => Promise<void>) => void },
  extra: Partial<PortalConfigFile> = {},
): Promise<Stand> {
  const stand: { portal?: TestPortal; now: Date } = { now: new Date(Math.floor(Date.now() / 1000) * 1000) };
  const portal = await startTestPortal({ config: { ...config, ...extra }, clock: { now: () => stand.now } });
  t.after(() => portal.close());
  stand.portal = portal;
  return stand as Stand;
}

async function createWireGuard(portal: TestPortal, userId: string, expiresIn: string): Promise<string> {
  const { publicKey } = wgGenkey();
  const created = await portal.post(
    '/create',
    { user_id: userId, profile_id: 'both', public_key: publicKey, expires_in: expiresIn },
    { accept: WIREGUARD },
  );
  assert.equal(created.status, 200, created.text);
  return publicKey;
}

async function expiryOf(portal: TestPortal, userId: string, connectionId: string): Promise<string | undefined> {
  return (await portal.admin.userConfigurationList(userId)).find((entry) => entry.connection_id === connectionId)
    ?.expires_at;
}

test('extend moves a WireGuard configuration to now + expires_in (sessionExpiry by default) and records it in the audit log', async (t) => {
  const stand = await start(t);
  const { portal } = stand;
  const connectionId = await createWireGuard(portal, 'alice', 'P1D');
  stand.now = new Date(stand.now.getTime() + 12 * 3_600_000);

  const extended = await portal.admin.extend({ user_id: 'alice', connection_id: connectionId, expires_in: 'P30D' });
  const expected = formatAtom(new Date(stand.now.getTime() + 30 * DAY));
  assert.deepEqual(extended, {
    connection_id: connectionId,
    vpn_proto: 'wireguard',
    expires_at: expected,
    certificate: null,
  });
  assert.equal(await expiryOf(portal, 'alice', connectionId), expected);

  const byDefault = await portal.admin.extend({ user_id: 'alice', connection_id: connectionId });
  assert.equal(
    byDefault.expires_at,
    formatAtom(new Date(stand.now.getTime() + 90 * DAY)),
    'sessionExpiry when expires_in is left out',
  );
  assert.equal(await expiryOf(portal, 'alice', connectionId), byDefault.expires_at);

  const [entry] = (await portal.admin.auditLog({ user_id: 'alice' })).audit_log;
  assert.deepEqual(
    [entry?.call, entry?.status, entry?.connection_ids, entry?.parameters],
    ['extend', 200, [connectionId], { user_id: 'alice', connection_id: connectionId }],
  );
});

test('an extended configuration keeps working past its old expiry: the expiry sweep leaves it alone', async (t) => {
  const stand = await start(t);
  const { portal } = stand;
  const kept = await createWireGuard(portal, 'alice', 'P1D');
  const control = await createWireGuard(portal, 'alice', 'P1D');
  await portal.admin.extend({ user_id: 'alice', connection_id: kept, expires_in: 'P30D' });
  stand.now = new Date(stand.now.getTime() + 2 * DAY);
  await portal.reconcile();
  const left = (await portal.admin.userConfigurationList('alice')).map((entry) => entry.connection_id);
  assert.deepEqual(left, [kept], 'the one not extended expired, the extended one stays');
  assert.equal(left.includes(control), false);
});

test('expires_in follows create: an unsupported value is refused with its message, and the CA end caps the expiry', async (t) => {
  const stand = await start(t, { caExpiry: 'P10D' });
  const { portal } = stand;
  const connectionId = await createWireGuard(portal, 'alice', 'P1D');
  const before = await portalState(portal);
  const unsupported = await portal.post('/extend', {
    user_id: 'alice',
    connection_id: connectionId,
    expires_in: 'P2D',
  });
  assert.equal(unsupported.status, 400);
  assert.equal(
    errorBody(unsupported.text),
    'provided "expires_in" is not supported by the server, add it to "supportedSessionExpiry" configuration option (supported: P90D, P1D, P30D)',
  );
  assert.deepEqual(await portalState(portal), before);

  const caEnd = (await portal.portal.ctx.openVpnKeys.ca())?.notAfter;
  assert.ok(caEnd !== undefined);
  const capped = await portal.admin.extend({ user_id: 'alice', connection_id: connectionId, expires_in: 'P30D' });
  assert.equal(capped.expires_at, formatAtom(caEnd), "the CA's end, not 30 days");
  const again = await portal.admin.extend({ user_id: 'alice', connection_id: connectionId, expires_in: 'P30D' });
  assert.equal(again.expires_at, capped.expires_at, 'extending to the same end again is no error');
});

test('extend never shortens, never brings back an expired configuration, and refuses what is not the user’s', async (t) => {
  const stand = await start(t);
  const { portal } = stand;
  const connectionId = await createWireGuard(portal, 'alice', 'P30D');
  await createWireGuard(portal, 'bob', 'P1D');
  const before = await portalState(portal);
  const expiresAt = await expiryOf(portal, 'alice', connectionId);

  const cases: [Record<string, string>, number, string][] = [
    [
      { user_id: 'alice', connection_id: connectionId, expires_in: 'P1D' },
      409,
      `the configuration expires at ${expiresAt}, later than "expires_in" would make it (${formatAtom(new Date(stand.now.getTime() + DAY))}); extend never shortens, delete_connection ends a configuration`,
    ],
    [{ user_id: 'bob', connection_id: connectionId }, 404, 'the user has no configuration with this "connection_id"'],
    [
      { user_id: 'alice', connection_id: wgGenkey().publicKey },
      404,
      'the user has no configuration with this "connection_id"',
    ],
    [{ user_id: 'carol', connection_id: connectionId }, 400, 'user does not exist'],
    [{ user_id: 'alice' }, 400, 'missing post parameter "connection_id"'],
  ];
  for (const [form, status, message] of cases) {
    const response = await portal.post('/extend', form);
    assert.equal(response.status, status, `${JSON.stringify(form)}: ${response.text}`);
    assert.equal(errorBody(response.text), message);
  }

  await portal.admin.disableUser('alice');
  const disabled = await portal.post('/extend', { user_id: 'alice', connection_id: connectionId });
  assert.deepEqual([disabled.status, errorBody(disabled.text)], [403, 'user is disabled']);
  await portal.admin.enableUser('alice');

  // Past its expiry but not yet swept: it stays expired.
  stand.now = new Date(stand.now.getTime() + 31 * DAY);
  const expired = await portal.post('/extend', { user_id: 'alice', connection_id: connectionId });
  assert.deepEqual(
    [expired.status, errorBody(expired.text)],
    [409, 'the configuration has expired; an expired configuration is never brought back, create a new one'],
  );
  assert.deepEqual(await portalState(portal), before, 'nothing changed');
  assert.equal(await expiryOf(portal, 'alice', connectionId), expiresAt);
});

for (const kind of ['Ed25519', 'P-256'] as const) {
  test(`an OpenVPN configuration from a ${kind} CSR gets a new certificate for the same key and name, valid to the new expiry`, async (t) => {
    const stand = await start(t);
    const { portal } = stand;
    const device = opensslCsr(kind);
    const created = await portal.post(
      '/create',
      { user_id: 'alice', profile_id: 'both', csr: device.csrPem, expires_in: 'P1D' },
      { accept: OPENVPN },
    );
    assert.equal(created.status, 200, created.text);
    const [configuration] = await portal.admin.userConfigurationList('alice');
    assert.ok(configuration !== undefined);
    const first = new X509Certificate(/<cert>\n([\s\S]*?)\n<\/cert>/.exec(created.text)?.[1] ?? '');

    stand.now = new Date(stand.now.getTime() + 3_600_000);
    const extended = await portal.admin.extend({
      user_id: 'alice',
      connection_id: configuration.connection_id,
      expires_in: 'P30D',
    });
    assert.equal(extended.vpn_proto, 'openvpn');
    assert.equal(extended.expires_at, formatAtom(new Date(stand.now.getTime() + 30 * DAY)));
    assert.ok(extended.certificate !== null);
    const renewed = new X509Certificate(extended.certificate);
    assert.equal(
      renewed.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      device.publicKeyPem,
      "the device's key",
    );
    assert.equal(renewed.subject, first.subject, 'the same OU and CN');
    assert.equal(
      new Date(renewed.validTo).getTime(),
      new Date(extended.expires_at).getTime(),
      'valid exactly to the new expiry',
    );
    assert.ok(new Date(renewed.validTo).getTime() > new Date(first.validTo).getTime());
    assert.ok(renewed.verify(caKeyOf(created.text)), 'signed by the portal CA');
    assert.equal(await expiryOf(portal, 'alice', configuration.connection_id), extended.expires_at);
  });
}

test("a configuration enrolled with a device's certificate is not extended past that certificate's end", async (t) => {
  const ca = MdmCa.make();
  t.after(() => ca.remove());
  const certificate = ca.device('mac', { cn: 'mac', uri: 'urn:mdm:serial:EXT-1' }, 2);
  const portal = await startTestPortal({ config: { sessionExpiry: 'P30D', enrollment: ca.mutualTlsEnrollment({}) } });
  t.after(() => portal.close());
  const registered = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'macos',
    serial: 'EXT-1',
  });
  const { publicKey } = wgGenkey();
  const enrolled = await enrollOverTls(tlsEnrollUrl(portal), ca, certificate, { public_key: publicKey });
  assert.equal(enrolled.status, 200, enrolled.text);
  const notAfter = (await portal.admin.device(registered.device_id)).certificate?.not_after;
  assert.ok(notAfter !== undefined);
  assert.equal(await expiryOf(portal, 'alice', publicKey), notAfter, 'it ends with the certificate, before 30 days');

  // A renewal system answering configuration.expiring: the portal's 30 days would outlive the certificate.
  const extended = await portal.admin.extend({ user_id: 'alice', connection_id: publicKey });
  assert.equal(extended.expires_at, notAfter, "the answer says it still ends with the device's certificate");
  assert.equal(await expiryOf(portal, 'alice', publicKey), notAfter, 'and so does the database');
});

test('an OpenVPN configuration whose key the portal made cannot be extended: 409 says why and what to do', async (t) => {
  const stand = await start(t);
  const { portal } = stand;
  const created = await portal.post('/create', { user_id: 'alice', profile_id: 'both' }, { accept: OPENVPN });
  assert.equal(created.status, 200, created.text);
  const [configuration] = await portal.admin.userConfigurationList('alice');
  assert.ok(configuration !== undefined);
  const before = await portalState(portal);
  const response = await portal.post('/extend', { user_id: 'alice', connection_id: configuration.connection_id });
  assert.equal(response.status, 409);
  assert.equal(
    errorBody(response.text),
    'this OpenVPN configuration cannot be extended: its key was made by the portal and not kept, so no certificate can be issued for it again; ' +
      'create a new configuration (with "csr", the device keeps its key and the configuration can be extended)',
  );
  assert.deepEqual(await portalState(portal), before);
  assert.equal(await expiryOf(portal, 'alice', configuration.connection_id), configuration.expires_at);
});

/** The CA certificate's public key, from a file the portal made. */
function caKeyOf(file: string): KeyObject {
  return new X509Certificate(/<ca>\n([\s\S]*?)\n<\/ca>/.exec(file)?.[1] ?? '').publicKey;
}
