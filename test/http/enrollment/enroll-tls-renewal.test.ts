// A configuration issued through mutual-TLS enrollment does not outlive the certificate that
// proved the device: it ends at min(the portal's lifetime, the certificate's notAfter). When the
// MDM renews the certificate (same device id, new serial number and notAfter) and the device
// enrolls again, the configuration is replaced in place: the same device, bound now to the new
// certificate, one configuration ending with the new certificate or the portal's lifetime, the
// old one revoked with a receipt (reason `replaced`), and both enrollments in the device's history.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asDeviceId } from '../../../src/shared/ids.js';
import { deviceHistory } from '../../../src/storage/device-history.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { enrollOverTls, MdmCa, tlsEnrollUrl } from '../../support/mdm-ca.js';
import { startTestPortal } from '../../support/test-portal.js';

const DAY_MS = 86_400_000;

test("a device's configuration ends with its certificate, and the renewed certificate replaces it in place", async (t) => {
  const ca = MdmCa.make();
  t.after(() => ca.remove());
  // The MDM renews a certificate valid two days for one valid twenty; the portal's own lifetime is five days.
  const first = ca.device('first', { cn: 'mac', uri: 'urn:mdm:serial:REN-1' }, 2);
  const renewed = ca.device('renewed', { cn: 'mac', uri: 'urn:mdm:serial:REN-1' }, 20);
  const portal = await startTestPortal({ config: { sessionExpiry: 'P5D', enrollment: ca.mutualTlsEnrollment({}) } });
  t.after(() => portal.close());
  const registered = await portal.admin.registerDevice({
    user_id: 'alice',
    profile_id: 'employees',
    platform: 'macos',
    serial: 'REN-1',
  });
  const url = tlsEnrollUrl(portal);

  const firstKey = generateWireGuardKeyPair().publicKey;
  const enrolled = await enrollOverTls(url, ca, first, { public_key: firstKey });
  assert.equal(enrolled.status, 200, enrolled.text);
  const before = await portal.admin.device(registered.device_id);
  const firstNotAfter = before.certificate?.not_after ?? '';
  assert.ok(Date.parse(firstNotAfter) < Date.now() + 3 * DAY_MS, 'the first certificate ends in two days');
  assert.deepEqual(
    before.configurations.map((configuration) => [configuration.connection_id, configuration.expires_at]),
    [[firstKey, firstNotAfter]],
    'the configuration ends exactly with the certificate, before the portal’s five days',
  );

  const renewedKey = generateWireGuardKeyPair().publicKey;
  const again = await enrollOverTls(url, ca, renewed, { public_key: renewedKey });
  assert.equal(again.status, 200, again.text);
  const after = await portal.admin.device(registered.device_id);
  assert.equal(after.device_id, registered.device_id, 'the same device');
  assert.notEqual(after.certificate?.serial_number, before.certificate?.serial_number);
  assert.ok(Date.parse(after.certificate?.not_after ?? '') > Date.now() + 19 * DAY_MS, 'bound to the renewed one');
  assert.equal(after.configurations.length, 1, 'replaced in place');
  const [configuration] = after.configurations;
  assert.equal(configuration?.connection_id, renewedKey);
  const expiresIn = Date.parse(configuration?.expires_at ?? '') - Date.now();
  assert.ok(
    expiresIn > 4.9 * DAY_MS && expiresIn <= 5 * DAY_MS,
    'the portal’s five days, before the renewed certificate’s twenty',
  );
  assert.equal(Date.parse(String(again.headers['expires'])), Date.parse(configuration?.expires_at ?? ''));

  const [receipt] = await portal.admin.revocations();
  assert.deepEqual(
    [receipt?.reason, receipt?.user_id, receipt?.connection_ids],
    ['replaced', 'alice', [firstKey]],
    'the old configuration leaves its node with a receipt',
  );
  const history = await deviceHistory(portal.portal.ctx.db, asDeviceId(registered.device_id));
  assert.deepEqual(
    history.map((entry) => [entry.change, entry.by, entry.reason, entry.revocationId]),
    [
      ['registered', 'secret', null, null],
      ['enrolled', '(device)', `certificate ${before.certificate?.serial_number ?? ''}`, null],
      ['enrolled', '(device)', `certificate ${after.certificate?.serial_number ?? ''}`, receipt?.revocation_id],
    ],
  );
});
