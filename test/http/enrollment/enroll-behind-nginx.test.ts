// Certificate enrollment behind nginx: nginx from Debian runs the shipped site files
// (examples/nginx/vpn-portal.conf and vpn-portal-mtls.conf) on one host, as an operator would;
// the mTLS site asks for the device's certificate, verifies it against the MDM's CAs and forwards
// it with nginx's verdict; the portal believes it only from enrollment.clientCertificate's
// trustedProxyList and only with the verdict SUCCESS, and checks the certificate itself. A client
// without a certificate cannot forge either header through any location of either site.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { freePort } from '../../support/free-port.js';
import { MdmCa, type DeviceCertificateFiles } from '../../support/mdm-ca.js';
import {
  NGINX_EXAMPLES,
  NGINX_MTLS_EXAMPLE,
  renderExample,
  startNginx,
  throwawayCertificate,
} from '../../support/nginx.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal } from '../../support/test-portal.js';

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
        agent: false,
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

function tempDir(t: { after: (fn: () => void) => void }): string {
  const directory = mkdtempSync(path.join(tmpdir(), 'enroll-nginx-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

test('behind the shipped nginx sites a device enrolls with its MDM certificate, and a certificate without its key enrolls through no site', async (t) => {
  const directory = tempDir(t);
  const ca = MdmCa.make();
  const stranger = MdmCa.make('Stranger');
  t.after(() => {
    ca.remove();
    stranger.remove();
  });
  const server = ca.server('server');
  const bobsLaptop = ca.device('laptop', { cn: 'laptop', uri: 'urn:mdm:serial:SER-1' });
  const foreign = stranger.device('foreign', { cn: 'foreign', uri: 'urn:mdm:serial:SER-1' });
  // What nginx verifies against: the issuing CA and its root; the portal trusts the issuing CA.
  const mdmCaFile = path.join(directory, 'mdm-ca.pem');
  writeFileSync(mdmCaFile, `${ca.issuingPem}${ca.rootPem}`);
  const portal = await startTestPortal({
    config: {
      adminApi: { trustedProxyList: ['127.0.0.1/32'] },
      enrollment: {
        requestsPerMinute: 10_000,
        clientCertificate: {
          trustAnchors: [path.join(ca.directory, 'issuing.pem')],
          deviceId: { from: 'san-uri', prefix: 'urn:mdm:serial:' },
          trustedProxyList: ['127.0.0.1/32'],
        },
      },
    },
  });
  t.after(() => portal.close());
  await portal.admin.registerDevice({ user_id: 'bob', profile_id: 'employees', platform: 'macos', serial: 'SER-1' });

  // Both sites in one nginx on the portal's host: both reach the portal from 127.0.0.1.
  const mainPort = await freePort();
  const mtlsPort = await freePort();
  const main = renderExample([
    ['listen 443 ssl;', `listen 127.0.0.1:${mainPort} ssl;`],
    ['    listen [::]:443 ssl;\n', ''],
    ['/etc/ssl/vpn-portal/fullchain.pem', server.certificate],
    ['/etc/ssl/vpn-portal/privkey.pem', server.key],
    ['http://127.0.0.1:8080', portal.portal.url],
  ]);
  const mtls = renderExample(
    [
      ['listen 8443 ssl;', `listen 127.0.0.1:${mtlsPort} ssl;`],
      ['/etc/ssl/vpn-portal/fullchain.pem', server.certificate],
      ['/etc/ssl/vpn-portal/privkey.pem', server.key],
      ['/etc/ssl/vpn-portal/mdm-ca.pem', mdmCaFile],
      ['http://127.0.0.1:8080', portal.portal.url],
    ],
    NGINX_MTLS_EXAMPLE,
  );
  const nginx = await startNginx(directory, `${main}\n${mtls}`, null, { host: '127.0.0.1', port: mtlsPort });
  t.after(() => nginx.stop());
  const caBundle = `${ca.rootPem}${ca.issuingPem}`;
  const mtlsUrl = `https://127.0.0.1:${mtlsPort}/vpn-user-portal/enroll`;
  const mainUrl = `https://127.0.0.1:${mainPort}/vpn-user-portal/enroll`;

  const enrolled = await post(mtlsUrl, bobsLaptop, caBundle, { public_key: generateWireGuardKeyPair().publicKey });
  assert.equal(enrolled.status, 200, `${enrolled.text}\n${nginx.log()}`);
  const bobs = async () => (await portal.admin.devices()).devices[0];
  const before = await bobs();
  assert.equal(before?.identity, 'certificate');
  assert.equal(before?.configurations.length, 1);

  // Another CA: nginx says FAILED, and the portal believes no certificate.
  const refused = await post(mtlsUrl, foreign, caBundle, { public_key: generateWireGuardKeyPair().publicKey });
  assert.equal(refused.status, 403, refused.text);
  assert.match(
    errorBody(refused.text),
    /^the proxy did not verify the client certificate \(X-SSL-Client-Verify: FAILED:/,
  );

  // Bob's certificate without its key, forged in the headers, through each site, without a
  // client certificate on the connection.
  const stolen = encodeURIComponent(bobsLaptop.certificatePem);
  for (const url of [mainUrl, mtlsUrl]) {
    for (const forged of [
      { 'X-SSL-Client-Cert': stolen } as Record<string, string>,
      { 'X-SSL-Client-Cert': stolen, 'X-SSL-Client-Verify': 'SUCCESS' },
    ]) {
      const answer = await post(url, null, caBundle, { public_key: generateWireGuardKeyPair().publicKey }, forged);
      assert.equal(answer.status, 400, `${url} with ${Object.keys(forged).join(', ')}: ${answer.text}`);
      assert.match(errorBody(answer.text), /missing post parameter "enrollment_token"/);
    }
  }
  assert.deepEqual(await bobs(), before, "bob's configuration is unchanged");
});

test('every location of every shipped nginx site replaces both client-certificate headers a client sends', async (t) => {
  const directory = tempDir(t);
  const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  const upstream = createServer((incoming, answer) => {
    seen.push({ url: incoming.url ?? '', headers: incoming.headers });
    incoming.resume();
    answer.end('ok');
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  t.after(() => upstream.close());
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const { certificate, key } = await throwawayCertificate(directory, '127.0.0.1');

  for (const [index, file] of NGINX_EXAMPLES.entries()) {
    let site = readFileSync(file, 'utf8');
    const port = await freePort();
    site = site
      .replace(/listen \[::\]:\d+ ssl;\n/g, '')
      .replace(/listen (\d+) ssl;/g, `listen 127.0.0.1:${port} ssl;`)
      .replaceAll('/etc/ssl/vpn-portal/fullchain.pem', certificate)
      .replaceAll('/etc/ssl/vpn-portal/privkey.pem', key)
      .replaceAll('/etc/ssl/vpn-portal/mdm-ca.pem', certificate)
      .replace(/proxy_pass http:\/\/[^;]+;/g, `proxy_pass ${upstreamUrl};`);
    const locations = [...site.matchAll(/location\s+(=\s+)?(\S+)\s*\{/g)].map(([, exact, where = '']) =>
      exact === undefined ? `${where}x` : where,
    );
    assert.ok(locations.length > 0, `${file} has locations`);
    const nginx = await startNginx(path.join(directory, String(index)), site, null, { host: '127.0.0.1', port });
    try {
      for (const location of locations) {
        seen.length = 0;
        const answer = await post(
          `https://127.0.0.1:${port}${location}`,
          null,
          readFileSync(certificate, 'utf8'),
          {},
          { 'X-SSL-Client-Cert': 'forged', 'X-SSL-Client-Verify': 'SUCCESS' },
        );
        assert.equal(answer.status, 200, `${file} ${location}: ${answer.text}\n${nginx.log()}`);
        const [forwarded] = seen;
        assert.ok(forwarded !== undefined, `${file} ${location} reached its upstream`);
        assert.equal(forwarded.headers['x-ssl-client-cert'], undefined, `${file} ${location}: X-SSL-Client-Cert`);
        assert.notEqual(
          forwarded.headers['x-ssl-client-verify'],
          'SUCCESS',
          `${file} ${location}: X-SSL-Client-Verify`,
        );
      }
    } finally {
      await nginx.stop();
    }
  }
});
