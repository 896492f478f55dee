// A listed proxy forwards one certificate, the one it verified. A request that reaches the portal
// with two certificate headers (a proxy that adds its header to the one the client sent, rather
// than replacing it) says nothing certain about which certificate the proxy verified: the
// portal refuses it (403, "more than one X-SSL-Client-Cert") and enrolls nothing. Node joins
// repeated headers of unknown names into one string with ", ", so the two arrive as one value.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { MdmCa } from '../../support/mdm-ca.js';
import { socketExchange } from '../../support/raw-http.js';
import { startTestPortal } from '../../support/test-portal.js';

test('two certificate headers from a listed proxy are refused; the first, never verified, enrolls nothing', async (t) => {
  const ca = MdmCa.make();
  t.after(() => ca.remove());
  // The victim's certificate (a copy: not a secret), and the attacker's own, which the proxy verified.
  const victim = ca.device('victim', { cn: 'victim', uri: 'urn:mdm:serial:VICTIM-1' });
  const attacker = ca.device('attacker', { cn: 'attacker', uri: 'urn:mdm:serial:ATTACKER-1' });
  const portal = await startTestPortal({
    config: {
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
  const device = await portal.admin.registerDevice({
    user_id: 'victim',
    profile_id: 'employees',
    platform: 'linux',
    serial: 'VICTIM-1',
  });

  const url = new URL(portal.portal.url);
  const body = new URLSearchParams({ public_key: generateWireGuardKeyPair().publicKey }).toString();
  const request = [
    `POST ${portal.portal.ctx.config.basePath}/enroll HTTP/1.1`,
    `Host: ${url.host}`,
    'Accept: application/x-wireguard-profile',
    'Content-Type: application/x-www-form-urlencoded',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    // What the client sent, then what the proxy added.
    `X-SSL-Client-Cert: ${encodeURIComponent(victim.certificatePem)}`,
    `X-SSL-Client-Cert: ${encodeURIComponent(attacker.certificatePem)}`,
    'X-SSL-Client-Verify: SUCCESS',
    '',
    body,
  ].join('\r\n');
  const exchange = await socketExchange({ host: url.hostname, port: Number(url.port) }, request);
  const answer = exchange.responses[0];
  assert.ok(answer, exchange.received);
  assert.equal(answer.status, 403, `${answer.status} ${answer.body.slice(0, 200)}`);
  assert.match(answer.body, /more than one X-SSL-Client-Cert/);
  assert.deepEqual((await portal.admin.device(device.device_id)).configurations, []);
});
