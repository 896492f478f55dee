// A device that registers itself with its MDM certificate (registerAs) is refused when a live
// device holds its device id in another letter case: MDMs name identifiers in either case, and
// two live devices named `8a1b…` and `8A1B…` could not be told apart by any MDM event. The
// refusal is a 409 naming the identifier, in the audit log, and registers nothing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { auditRecords } from '../../../src/storage/audit-log.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { type MdmCa, enrollOverTls, tlsEnrollUrl } from '../../support/mdm-ca.js';
import { errorBody } from '../../support/raw-http.js';
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

const enroll = (file: string, serial: string, email: string) =>
  enrollOverTls(tlsEnrollUrl(portal), ca, ca.device(file, { cn: file, uri: `urn:mdm:serial:${serial}`, email }), {
    public_key: generateWireGuardKeyPair().publicKey,
    platform: 'macos',
  });

test('a certificate whose device id a live device holds in another letter case registers nothing: 409, audited', async () => {
  const registered = await portal.admin.registerDevice({
    user_id: 'olga@example.org',
    profile_id: 'employees',
    platform: 'macos',
    serial: 'c02case1abcd',
  });
  const devicesBefore = await portal.admin.devices();

  for (const [file, email] of [
    ['case-olga', 'olga@example.org'],
    ['case-paul', 'paul@example.org'],
  ] as const) {
    const refused = await enroll(file, 'C02CASE1ABCD', email);
    assert.equal(refused.status, 409, refused.text);
    assert.match(
      errorBody(refused.text),
      /^"serial" "C02CASE1ABCD" is already held by a live device in another letter case \((device dev_\w+ of this user, as "c02case1abcd"|a device of another user)\)/,
    );
  }
  assert.deepEqual(await portal.admin.devices(), devicesBefore);
  assert.ok(!(await portal.admin.users()).includes('paul@example.org'), 'no user is made either');
  const refusals = (await auditRecords(portal.portal.ctx.db, { limit: 100 })).filter(
    (entry) => entry.call === 'enroll' && entry.status === 409,
  );
  assert.equal(refusals.length, 2);
  assert.match(refusals[0]?.detail ?? '', /another letter case/);

  // The device as registered, named exactly, enrolls as before.
  const exact = await enroll('case-exact', 'c02case1abcd', 'olga@example.org');
  assert.equal(exact.status, 200, exact.text);
  const [device] = (await portal.admin.devices({ serial: 'c02case1abcd' })).devices;
  assert.equal(device?.device_id, registered.device_id);
  assert.equal(device?.state, 'active');
});
