// Certificate enrollment behind nginx (issue 23, item 3): nginx from Debian runs
// examples/nginx/vpn-portal-mtls.conf, asks for the device's certificate and forwards it in
// X-SSL-Client-Cert; the portal believes the header only from a trusted proxy and checks the
// certificate itself: the registered device gets its file, a certificate from another CA is
// refused with the portal's reason, and the header sent straight to the portal by anyone else
// is ignored.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';
import { freePort } from '../support/free-port.js';
import { MdmCa, type DeviceCertificateFiles } from '../support/mdm-ca.js';
import { startNginx } from '../support/nginx.js';
import { errorBody } from '../support/raw-http.js';
import { startTestPortal } from '../support/test-portal.js';

const EXAMPLE = new URL('../../examples/nginx/vpn-portal-mtls.conf', import.meta.url).pathname;
const WIREGUARD = 'application/x-wireguard-profile';

function post(
  url: string,
  device: DeviceCertificateFiles | null,
  ca: string,
  form: Record<string, string>,
  headers: Record<string, string> = {},
) {
  return new Promise<{ status: number; text: string }>((resolve, reject) => {
    const sent = request(
      url,
      {
        method: 'POST',
        ca,
        ...(device === null ? {} : { cert: device.certificatePem, key: readFileSync(device.key) }),
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: WIREGUARD, ...headers },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      },
    );
    sent.on('error', reject);
    sent.end(new URLSearchParams(form).toString());
  });
}

test('behind nginx a device enrolls with its MDM certificate; another CA is refused; the header is believed only from the proxy', async (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'enroll-nginx-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const ca = MdmCa.make();
  const stranger = MdmCa.make('Stranger');
  t.after(() => {
    ca.remove();
    stranger.remove();
  });
  const server = ca.server('server');
  const laptop = ca.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:SER-1' });
  const foreign = stranger.device('foreign', { cn: 'foreign', uri: 'urn:mdm:serial:SER-1' });
  const issuingFile = path.join(ca.directory, 'issuing.pem');
  const clientCertificate = {
    trustAnchors: [issuingFile],
    deviceId: { from: 'san-uri' as const, prefix: 'urn:mdm:serial:' },
  };
  const portal = await startTestPortal({
    config: {
      adminApi: { trustedProxyList: ['127.0.0.1/32'] },
      enrollment: { requestsPerMinute: 10_000, clientCertificate },
    },
  });
  t.after(() => portal.close());
  await portal.admin.registerDevice({ user_id: 'alice', profile_id: 'employees', platform: 'macos', serial: 'SER-1' });

  const port = await freePort();
  let site = readFileSync(EXAMPLE, 'utf8');
  for (const [from, to] of [
    ['listen 8443 ssl;', `listen 127.0.0.1:${port} ssl;`],
    ['/etc/ssl/vpn-portal/fullchain.pem', server.certificate],
    ['/etc/ssl/vpn-portal/privkey.pem', server.key],
    ['http://127.0.0.1:8080', portal.portal.url],
  ] as const) {
    assert.ok(site.includes(from), `the example contains "${from}"`);
    site = site.split(from).join(to);
  }
  const nginx = await startNginx(directory, site, null, { host: '127.0.0.1', port });
  t.after(() => nginx.stop());
  const url = `https://127.0.0.1:${port}/vpn-user-portal/enroll`;
  const caBundle = `${ca.rootPem}${ca.issuingPem}`;

  const enrolled = await post(url, laptop, caBundle, { public_key: generateWireGuardKeyPair().publicKey });
  assert.equal(enrolled.status, 200, `${enrolled.text}\n${nginx.log()}`);
  const [device] = (await portal.admin.devices()).devices;
  assert.equal(device?.identity, 'certificate');
  assert.equal(device?.configurations.length, 1);

  const refused = await post(url, foreign, caBundle, { public_key: generateWireGuardKeyPair().publicKey });
  assert.equal(refused.status, 403);
  assert.match(errorBody(refused.text), /does not chain to a trust anchor/);
  const forged = await post(
    url,
    null,
    caBundle,
    { public_key: generateWireGuardKeyPair().publicKey },
    { 'X-SSL-Client-Cert': encodeURIComponent(laptop.certificatePem) },
  );
  assert.equal(forged.status, 400, 'a header the device sends itself is replaced by nginx (empty: no certificate)');
  assert.match(errorBody(forged.text), /missing post parameter "enrollment_token"/);
});

test('the forwarded certificate header is ignored from an address that is not a trusted proxy', async (t) => {
  const ca = MdmCa.make();
  t.after(() => ca.remove());
  const laptop = ca.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:SER-1' });
  const clientCertificate = {
    trustAnchors: [path.join(ca.directory, 'issuing.pem')],
    deviceId: { from: 'san-uri' as const, prefix: 'urn:mdm:serial:' },
  };
  const portal = await startTestPortal({ config: { enrollment: { requestsPerMinute: 10_000, clientCertificate } } });
  t.after(() => portal.close());
  await portal.admin.registerDevice({ user_id: 'alice', profile_id: 'employees', platform: 'macos', serial: 'SER-1' });
  const answer = await portal.request(`${portal.portal.url}${portal.portal.ctx.config.basePath}/enroll`, {
    method: 'POST',
    body: new URLSearchParams({ public_key: generateWireGuardKeyPair().publicKey }),
    headers: { accept: WIREGUARD, 'x-ssl-client-cert': encodeURIComponent(laptop.certificatePem) },
  });
  assert.equal(answer.status, 400);
  assert.match(errorBody(answer.text), /missing post parameter "enrollment_token"/);
  assert.deepEqual((await portal.admin.devices()).devices[0]?.configurations, []);
});
