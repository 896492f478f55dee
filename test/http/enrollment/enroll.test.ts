// `{baseUrl}enroll` on the portal's own server, called straight (no proxy): a client
// certificate forwarded in a header is believed only from a peer in
// enrollment.clientCertificate.trustedProxyList (not adminApi.trustedProxyList), and only when
// that peer says it verified it; anything else enrolls nothing and changes nothing.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { auditRecords } from '../../../src/storage/audit-log.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { clearOfMinuteEnd } from '../../support/audit-minute.js';
import { MdmCa } from '../../support/mdm-ca.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const WIREGUARD = 'application/x-wireguard-profile';

function enroll(portal: TestPortal, form: Record<string, string>, headers: Record<string, string>) {
  return portal.request(`${portal.portal.url}${portal.portal.ctx.config.basePath}/enroll`, {
    method: 'POST',
    body: new URLSearchParams(form),
    headers: { accept: WIREGUARD, ...headers },
  });
}

test('a peer in adminApi.trustedProxyList but not in enrollment.clientCertificate.trustedProxyList cannot forward a client certificate', async (t) => {
  const ca = MdmCa.make();
  t.after(() => ca.remove());
  const laptop = ca.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:SER-1' });
  const portal = await startTestPortal({
    config: {
      adminApi: { trustedProxyList: ['127.0.0.1/32'] },
      enrollment: {
        requestsPerMinute: 10_000,
        clientCertificate: {
          trustAnchors: [path.join(ca.directory, 'issuing.pem')],
          deviceId: { from: 'san-uri', prefix: 'urn:mdm:serial:' },
        },
      },
    },
  });
  t.after(() => portal.close());
  await portal.admin.registerDevice({ user_id: 'bob', profile_id: 'employees', platform: 'macos', serial: 'SER-1' });
  const forged = {
    'x-ssl-client-cert': encodeURIComponent(laptop.certificatePem),
    'x-ssl-client-verify': 'SUCCESS',
  };

  // Both refusals below are one audit row: sent within one minute.
  await clearOfMinuteEnd();
  const answer = await enroll(portal, { public_key: generateWireGuardKeyPair().publicKey }, forged);
  assert.equal(answer.status, 403, answer.text);
  assert.equal(
    errorBody(answer.text),
    'a client certificate header from a peer not in enrollment.clientCertificate.trustedProxyList',
  );
  // With a token as well: the header is refused before anything else is looked at.
  const { enrollment_token: token } = await portal.admin.enrollmentToken({ user_id: 'carol', profile_id: 'employees' });
  const withToken = await enroll(
    portal,
    { enrollment_token: token, public_key: generateWireGuardKeyPair().publicKey },
    forged,
  );
  assert.equal(withToken.status, 403, withToken.text);
  assert.deepEqual((await portal.admin.devices()).devices[0]?.configurations, []);
  // The token was not used: it still enrolls, without the header.
  const redeemed = await enroll(
    portal,
    { enrollment_token: token, public_key: generateWireGuardKeyPair().publicKey },
    {},
  );
  assert.equal(redeemed.status, 200, redeemed.text);
  // Both refusals are in the audit log (the same refusal again is counted on its row).
  const refusals = (await auditRecords(portal.portal.ctx.db, { limit: 100 })).filter(
    (record) => record.call === 'enroll' && record.status === 403,
  );
  assert.deepEqual(
    refusals.map((record) => [record.detail, record.sourceAddress, 1 + record.repeated]),
    [['a client certificate header from a peer not in enrollment.clientCertificate.trustedProxyList', '127.0.0.1', 2]],
  );
});

test("a listed peer's forwarded certificate is believed only when its verify header says SUCCESS", async (t) => {
  const ca = MdmCa.make();
  t.after(() => ca.remove());
  const laptop = ca.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:SER-1' });
  const portal = await startTestPortal({
    config: {
      enrollment: {
        requestsPerMinute: 10_000,
        clientCertificate: {
          trustAnchors: [path.join(ca.directory, 'issuing.pem')],
          deviceId: { from: 'san-uri', prefix: 'urn:mdm:serial:' },
          trustedProxyList: ['127.0.0.1/32'],
          verifiedHeader: 'X-Proxy-Verified',
        },
      },
    },
  });
  t.after(() => portal.close());
  await portal.admin.registerDevice({ user_id: 'bob', profile_id: 'employees', platform: 'macos', serial: 'SER-1' });
  const certificate = { 'x-ssl-client-cert': encodeURIComponent(laptop.certificatePem) };

  const verdicts: Record<string, string>[] = [
    {},
    { 'x-proxy-verified': 'NONE' },
    { 'x-proxy-verified': 'FAILED:certificate has expired' },
    { 'x-proxy-verified': 'success' },
    // The default header's name is not the one configured.
    { 'x-ssl-client-verify': 'SUCCESS' },
  ];
  for (const verdict of verdicts) {
    const answer = await enroll(
      portal,
      { public_key: generateWireGuardKeyPair().publicKey },
      { ...certificate, ...verdict },
    );
    assert.equal(answer.status, 403, `${JSON.stringify(verdict)}: ${answer.text}`);
    assert.match(errorBody(answer.text), /^the proxy did not verify the client certificate \(/);
  }
  assert.deepEqual((await portal.admin.devices()).devices[0]?.configurations, []);

  const enrolled = await enroll(
    portal,
    { public_key: generateWireGuardKeyPair().publicKey },
    { ...certificate, 'x-proxy-verified': 'SUCCESS' },
  );
  assert.equal(enrolled.status, 200, enrolled.text);
  assert.equal((await portal.admin.devices()).devices[0]?.configurations.length, 1);
});

test('without enrollment.clientCertificate a client-certificate header means nothing and a token enrolls as always', async (t) => {
  const portal = await startTestPortal({ config: { enrollment: { requestsPerMinute: 10_000 } } });
  t.after(() => portal.close());
  const { enrollment_token: token } = await portal.admin.enrollmentToken({ user_id: 'carol', profile_id: 'employees' });
  const answer = await enroll(
    portal,
    { enrollment_token: token, public_key: generateWireGuardKeyPair().publicKey },
    { 'x-ssl-client-cert': 'anything', 'x-ssl-client-verify': 'SUCCESS' },
  );
  assert.equal(answer.status, 200, answer.text);
});
