// A revocation list retires only the devices whose certificate the very CA that signed it issued.
// A CA renewed under its name with a new key (or any other CA of the same name) issues its own
// serial numbers; a serial that the other CA of that name revoked is not this one's certificate.
// The portal keeps which CA certificate issued a device's certificate (its fingerprint), and at
// enrollment it uses a list only when the chain's own issuer signed it; retiring must hold to the
// same, or a genuine list of one CA retires, for good, a device of its namesake.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { CrlServer, MdmCa, enrollOnceListsRead, tlsEnrollUrl } from '../../support/mdm-ca.js';
import { startTestPortal, type TestPortal, metricsText } from '../../support/test-portal.js';
import { until } from '../../support/until.js';

describe('a list of one CA and a device of its namesake with the same certificate serial', () => {
  let previous: MdmCa;
  let renewed: MdmCa;
  let served: string;
  let portal: TestPortal | undefined;
  let crls: CrlServer | undefined;

  before(async () => {
    // Two CAs of the very same names, each with keys of its own (a CA renewed under its name).
    previous = MdmCa.make('Namesake MDM');
    renewed = MdmCa.make('Namesake MDM');
    served = previous.writeCrl();
    crls = await CrlServer.start(() => served);
    portal = await startTestPortal({
      config: {
        enrollment: renewed.mutualTlsEnrollment({
          trustAnchors: [previous.rootFile, renewed.rootFile],
          intermediates: [previous.issuingFile, renewed.issuingFile],
          // The source names its CA: the previous one's key only.
          crl: [{ list: crls.url, issuer: previous.issuingFile }],
          crlRefresh: 'PT1S',
        }),
      },
    });
  });

  after(async () => {
    await portal?.close();
    await crls?.close();
    previous.remove();
    renewed.remove();
  });

  test("the previous CA revoking its own certificate of that serial leaves the renewed CA's device alone", async () => {
    assert.ok(portal && crls);
    const url = crls.url;
    await until(
      "the previous CA's list believed",
      async () => (await metricsText(portal as TestPortal)).includes(`vpn_portal_crl_entries{file="${url}"} 0`),
      30_000,
    );
    const device = await portal.admin.registerDevice({
      user_id: 'nina',
      profile_id: 'employees',
      platform: 'linux',
      serial: 'SAME-1',
    });
    const mine = renewed.device('nina-laptop', {
      cn: 'nina-laptop',
      uri: 'urn:mdm:serial:SAME-1',
      certificateSerial: '0x1001',
    });
    const enrolled = await enrollOnceListsRead(tlsEnrollUrl(portal), renewed, mine, {
      public_key: generateWireGuardKeyPair().publicKey,
    });
    assert.equal(enrolled.status, 200, enrolled.text);
    assert.equal((await portal.admin.device(device.device_id)).state, 'active');

    // The previous CA revokes a certificate of its own that happens to carry the same serial.
    const theirs = previous.device('other-laptop', {
      cn: 'other-laptop',
      uri: 'urn:mdm:serial:OTHER-1',
      certificateSerial: '0x1001',
    });
    served = previous.revoke(theirs.certificate);
    await until(
      "the previous CA's new list believed",
      async () => (await metricsText(portal as TestPortal)).includes(`vpn_portal_crl_entries{file="${url}"} 1`),
      30_000,
    );
    const reads = crls.requests + 3;
    await until('three more reads', async () => (crls as CrlServer).requests >= reads, 30_000);
    assert.equal(
      (await portal.admin.device(device.device_id)).state,
      'active',
      "the renewed CA's device was retired by the previous CA's list",
    );
  });
});
