// Certificate self-registration (registerAs): a device with a certificate of the test MDM's CA
// (made at run time with openssl) whose device id no live device has registers itself, for the
// user its certificate’s e-mail address names, in the configured profile; without a name or a
// platform it is refused, and so is a request that names another profile, or a certificate
// whose e-mail address or device id no Admin API call could name. A retired device's own
// certificate registers no device again, nor does its renewed one for the same user: retiring is
// final; nor does a destroyed user's, until an administrator makes the user again.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { type MdmCa, enrollOverTls, subjectAltNameDer, tlsEnrollUrl } from '../../support/mdm-ca.js';
import { startRegisterAsPortal, type RegisterAsPortal } from '../../support/register-as-portal.js';
import type { TestPortal } from '../../support/test-portal.js';

describe('registerAs: a device registers itself with its certificate', () => {
  let ca: MdmCa;
  let portal: TestPortal;

  let started: RegisterAsPortal | undefined;
  before(async () => {
    started = await startRegisterAsPortal();
    ({ ca, portal } = started);
  });
  after(() => started?.close());

  const enrollUrl = () => tlsEnrollUrl(portal);

  test('an unregistered device id registers a device for the user of the certificate’s e-mail address, bound to it', async () => {
    const laptop = ca.device('self-laptop', {
      cn: 'self-laptop',
      uri: 'urn:mdm:serial:SELF-1',
      email: 'frank@example.org',
    });
    const answer = await enrollOverTls(enrollUrl(), ca, laptop, {
      public_key: generateWireGuardKeyPair().publicKey,
      platform: 'linux',
    });
    assert.equal(answer.status, 200, answer.text);
    const [device] = (await portal.admin.devices({ serial: 'SELF-1' })).devices;
    assert.deepEqual(
      [device?.user_id, device?.profile_id, device?.platform, device?.identity, device?.state],
      ['frank@example.org', 'employees', 'linux', 'certificate', 'active'],
    );
    const again = await enrollOverTls(enrollUrl(), ca, laptop, {
      public_key: generateWireGuardKeyPair().publicKey,
      platform: 'linux',
    });
    assert.equal(again.status, 200, again.text);
    assert.equal(
      (await portal.admin.devices({ serial: 'SELF-1' })).devices.length,
      1,
      'enrolling again replaces, no second device',
    );
  });

  test('without an e-mail address, or without a platform, it is refused and nothing is stored', async () => {
    const before = JSON.stringify(await portal.admin.devices());
    const anonymous = ca.device('self-anonymous', { cn: 'anonymous', uri: 'urn:mdm:serial:SELF-2' });
    const refused = await enrollOverTls(enrollUrl(), ca, anonymous, {
      public_key: generateWireGuardKeyPair().publicKey,
      platform: 'linux',
    });
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.text, /names no user/);
    const named = ca.device('self-named', { cn: 'named', uri: 'urn:mdm:serial:SELF-3', email: 'gina@example.org' });
    const noPlatform = await enrollOverTls(enrollUrl(), ca, named, {
      public_key: generateWireGuardKeyPair().publicKey,
    });
    assert.equal(noPlatform.status, 400, noPlatform.text);
    assert.equal(JSON.stringify(await portal.admin.devices()), before);
  });

  test('the device does not choose its profile: naming another one is refused and registers nothing', async () => {
    const before = JSON.stringify(await portal.admin.devices());
    const laptop = ca.device('self-chooser', {
      cn: 'chooser',
      uri: 'urn:mdm:serial:SELF-4',
      email: 'hugo@example.org',
    });
    const elsewhere = await enrollOverTls(enrollUrl(), ca, laptop, {
      public_key: generateWireGuardKeyPair().publicKey,
      platform: 'linux',
      profile_id: 'guests',
    });
    assert.equal(elsewhere.status, 409, elsewhere.text);
    assert.equal(
      (JSON.parse(elsewhere.text) as { error: string }).error,
      'a device that registers itself is registered for profile "employees", not "guests"',
    );
    assert.equal(JSON.stringify(await portal.admin.devices()), before);
    const configured = await enrollOverTls(enrollUrl(), ca, laptop, {
      public_key: generateWireGuardKeyPair().publicKey,
      platform: 'linux',
      profile_id: 'employees',
    });
    assert.equal(configured.status, 200, configured.text);
    const [device] = (await portal.admin.devices({ serial: 'SELF-4' })).devices;
    assert.equal(device?.profile_id, 'employees');
  });

  test('an e-mail address no Admin API call could name as a user (over 255 characters, or with a NUL) is refused and registers nothing', async () => {
    const devicesBefore = JSON.stringify(await portal.admin.devices());
    const usersBefore = JSON.stringify(await portal.admin.users());
    const cases = [
      { serial: 'SELF-LONG', email: `${'l'.repeat(244)}@example.org` },
      { serial: 'SELF-NUL', email: 'ida\u0000@example.org' },
    ];
    for (const { serial, email } of cases) {
      const laptop = ca.device(`self-${serial}`, {
        cn: serial,
        extensions: [subjectAltNameDer({ uri: `urn:mdm:serial:${serial}`, email })],
      });
      const refused = await enrollOverTls(enrollUrl(), ca, laptop, {
        public_key: generateWireGuardKeyPair().publicKey,
        platform: 'linux',
      });
      assert.equal(refused.status, 403, `${serial}: ${refused.text}`);
      assert.match(
        (JSON.parse(refused.text) as { error: string }).error,
        /e-mail address is no user id an Admin API call can name \(1 to 255 characters, no NUL\)/,
      );
    }
    assert.equal(JSON.stringify(await portal.admin.devices()), devicesBefore);
    assert.equal(JSON.stringify(await portal.admin.users()), usersBefore);
  });

  test('a device id no Admin API call could name as a serial (over 255 characters, a space, a NUL) is refused and registers nothing', async () => {
    const devicesBefore = JSON.stringify(await portal.admin.devices());
    const usersBefore = JSON.stringify(await portal.admin.users());
    const cases = [
      { file: 'long', serial: 'L'.repeat(256) },
      { file: 'space', serial: 'SELF 5' },
      { file: 'nul', serial: 'SELF\u00006' },
    ];
    for (const { file, serial } of cases) {
      const laptop = ca.device(`self-id-${file}`, {
        cn: file,
        extensions: [subjectAltNameDer({ uri: `urn:mdm:serial:${serial}`, email: 'jo@example.org' })],
      });
      const refused = await enrollOverTls(enrollUrl(), ca, laptop, {
        public_key: generateWireGuardKeyPair().publicKey,
        platform: 'linux',
      });
      assert.equal(refused.status, 403, `${file}: ${refused.text}`);
      assert.match(
        (JSON.parse(refused.text) as { error: string }).error,
        /device id is no serial an Admin API call can name \(1 to 255 printable ASCII characters, no space\)/,
      );
    }
    assert.equal(JSON.stringify(await portal.admin.devices()), devicesBefore);
    assert.equal(JSON.stringify(await portal.admin.users()), usersBefore);
  });

  test('the certificate a retired device was bound to registers no device again; an administrator may register it anew', async () => {
    const laptop = ca.device('self-retired', {
      cn: 'self-retired',
      uri: 'urn:mdm:serial:SELF-RETIRED',
      email: 'kim@example.org',
    });
    const enroll = () =>
      enrollOverTls(enrollUrl(), ca, laptop, { public_key: generateWireGuardKeyPair().publicKey, platform: 'linux' });
    const first = await enroll();
    assert.equal(first.status, 200, first.text);
    const [registered] = (await portal.admin.devices({ serial: 'SELF-RETIRED' })).devices;
    await portal.admin.retireDevice(registered?.device_id ?? '');

    const again = await enroll();
    assert.equal(again.status, 403, again.text);
    assert.match(
      (JSON.parse(again.text) as { error: string }).error,
      /the client certificate is one retired device dev_[0-9a-f]{24} enrolled with/,
    );
    const devices = (await portal.admin.devices({ serial: 'SELF-RETIRED' })).devices;
    assert.deepEqual(
      devices.map((device) => [device.device_id, device.state]),
      [[registered?.device_id, 'retired']],
      'no new device, and no configuration',
    );

    const anew = await portal.admin.registerDevice({
      user_id: 'kim@example.org',
      profile_id: 'employees',
      platform: 'linux',
      serial: 'SELF-RETIRED',
    });
    const enrolled = await enroll();
    assert.equal(enrolled.status, 200, enrolled.text);
    assert.equal((await portal.admin.device(anew.device_id)).state, 'active');
  });

  test('nor does a certificate a retired device enrolled with before its renewed one', async () => {
    const first = ca.device('self-renewed-first', {
      cn: 'renewed',
      uri: 'urn:mdm:serial:SELF-R',
      email: 'lea@example.org',
    });
    const renewed = ca.device('self-renewed', {
      cn: 'renewed',
      uri: 'urn:mdm:serial:SELF-R',
      email: 'lea@example.org',
    });
    const enroll = (certificate: typeof first) =>
      enrollOverTls(enrollUrl(), ca, certificate, {
        public_key: generateWireGuardKeyPair().publicKey,
        platform: 'linux',
      });
    assert.equal((await enroll(first)).status, 200);
    assert.equal((await enroll(renewed)).status, 200);
    const [device] = (await portal.admin.devices({ serial: 'SELF-R' })).devices;
    await portal.admin.retireDevice(device?.device_id ?? '');

    const earlier = await enroll(first);
    assert.equal(earlier.status, 403, earlier.text);
    assert.equal((await portal.admin.devices({ serial: 'SELF-R' })).devices.length, 1, 'no new device');
  });

  test('a retired device does not come back with its renewed certificate; handed on to another person, or registered anew by an administrator, it enrolls', async () => {
    const issued = (file: string, email: string) =>
      ca.device(file, { cn: 'renewing', uri: 'urn:mdm:serial:SELF-RENEWING', email });
    const enroll = (certificate: ReturnType<typeof issued>) =>
      enrollOverTls(enrollUrl(), ca, certificate, {
        public_key: generateWireGuardKeyPair().publicKey,
        platform: 'windows',
      });
    const first = await enroll(issued('self-renewing-first', 'mia@example.org'));
    assert.equal(first.status, 200, first.text);
    const [registered] = (await portal.admin.devices({ serial: 'SELF-RENEWING' })).devices;
    await portal.admin.retireDevice(registered?.device_id ?? '');

    // The MDM renews the certificate: a new serial number, the same device id and user.
    const renewed = await enroll(issued('self-renewing-renewed', 'mia@example.org'));
    assert.equal(renewed.status, 403, renewed.text);
    assert.equal(
      (JSON.parse(renewed.text) as { error: string }).error,
      `the client certificate's device id is that of retired device ${registered?.device_id} of the same user; a retired device does not register itself again, with a renewed certificate either (an administrator may register it anew)`,
    );
    assert.deepEqual(
      (await portal.admin.devices({ serial: 'SELF-RENEWING' })).devices.map((device) => device.state),
      ['retired'],
      'no new device',
    );
    assert.deepEqual(await portal.admin.userConfigurationList('mia@example.org'), [], 'and no configuration');

    // The laptop reissued to another person: it registers itself for them.
    const reissued = await enroll(issued('self-renewing-reissued', 'noah@example.org'));
    assert.equal(reissued.status, 200, reissued.text);
    const [noahs] = (await portal.admin.devices({ serial: 'SELF-RENEWING', user_id: 'noah@example.org' })).devices;
    assert.equal(noahs?.state, 'active');
    await portal.admin.retireDevice(noahs?.device_id ?? '');

    const anew = await portal.admin.registerDevice({
      user_id: 'mia@example.org',
      profile_id: 'employees',
      platform: 'windows',
      serial: 'SELF-RENEWING',
    });
    const enrolled = await enroll(issued('self-renewing-again', 'mia@example.org'));
    assert.equal(enrolled.status, 200, enrolled.text);
    assert.equal((await portal.admin.device(anew.device_id)).state, 'active');
  });

  test("a destroyed user's device registers itself no more; once an administrator made the user again, it does", async () => {
    const phone = ca.device('self-destroyed', {
      cn: 'self-destroyed',
      uri: 'urn:mdm:serial:SELF-DESTROYED',
      email: 'lena@example.org',
    });
    const enroll = () =>
      enrollOverTls(enrollUrl(), ca, phone, { public_key: generateWireGuardKeyPair().publicKey, platform: 'ios' });
    const first = await enroll();
    assert.equal(first.status, 200, first.text);
    assert.equal((await portal.post('/destroy', { user_id: 'lena@example.org' })).status, 204);

    const again = await enroll();
    assert.equal(again.status, 403, again.text);
    assert.match(
      (JSON.parse(again.text) as { error: string }).error,
      /the client certificate's user was destroyed here; a device does not make a destroyed user again/,
    );
    assert.deepEqual((await portal.admin.devices({ serial: 'SELF-DESTROYED' })).devices, [], 'no device');
    assert.ok(!(await portal.admin.users()).includes('lena@example.org'), 'and no user');

    await portal.admin.create({ user_id: 'lena@example.org', profile_id: 'employees' });
    const afterCreate = await enroll();
    assert.equal(afterCreate.status, 200, afterCreate.text);
    const devices = (await portal.admin.devices({ serial: 'SELF-DESTROYED' })).devices;
    assert.deepEqual(
      devices.map((device) => [device.user_id, device.state]),
      [['lena@example.org', 'active']],
    );
  });
});
