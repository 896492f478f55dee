// Certificate self-registration (registerAs) names the device's user in the certificate. A laptop
// the MDM hands on to another person while the portal still holds it, live, for its first user
// comes with a certificate that names the new user: it must not enroll as the first user's
// device (the new user's traffic under the first user's name, kept on when the new user is
// disabled). It is refused until that registration is retired, and then registers itself for
// the new user.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { type MdmCa, enrollOverTls, tlsEnrollUrl } from '../../support/mdm-ca.js';
import { startRegisterAsPortal, type RegisterAsPortal } from '../../support/register-as-portal.js';
import type { TestPortal } from '../../support/test-portal.js';

let ca: MdmCa;
let portal: TestPortal;

let started: RegisterAsPortal | undefined;
before(async () => {
  started = await startRegisterAsPortal();
  ({ ca, portal } = started);
});
after(() => started?.close());

test("a laptop handed on to another person does not enroll as its first user's device while that one is live", async () => {
  const issued = (file: string, email: string) =>
    ca.device(file, { cn: 'handed-on', uri: 'urn:mdm:serial:HANDED-1', email });
  const enroll = (certificate: ReturnType<typeof issued>) =>
    enrollOverTls(tlsEnrollUrl(portal), ca, certificate, {
      public_key: generateWireGuardKeyPair().publicKey,
      platform: 'windows',
    });
  const first = await enroll(issued('handed-on-olga', 'olga@example.org'));
  assert.equal(first.status, 200, first.text);
  const [olgas] = (await portal.admin.devices({ serial: 'HANDED-1' })).devices;
  const olgasConfigurations = await portal.admin.userConfigurationList('olga@example.org');
  assert.equal(olgasConfigurations.length, 1);

  // The MDM gives the laptop to Paul, with a certificate of the same device id that names him.
  const paul = issued('handed-on-paul', 'paul@example.org');
  const refused = await enroll(paul);
  assert.equal(refused.status, 403, refused.text);
  assert.match(
    (JSON.parse(refused.text) as { error: string }).error,
    /^device dev_[0-9a-f]{24} is registered to another user than the client certificate names/,
  );
  assert.deepEqual(
    await portal.admin.userConfigurationList('olga@example.org'),
    olgasConfigurations,
    "Olga's configuration is neither replaced nor handed to Paul",
  );
  assert.deepEqual(await portal.admin.devices({ user_id: 'paul@example.org' }), { devices: [], next_cursor: null });

  // Once Olga's registration is retired, the laptop registers itself for Paul.
  await portal.admin.retireDevice(olgas?.device_id ?? '');
  const registered = await enroll(paul);
  assert.equal(registered.status, 200, registered.text);
  const [pauls] = (await portal.admin.devices({ serial: 'HANDED-1', user_id: 'paul@example.org' })).devices;
  assert.equal(pauls?.state, 'active');
});
