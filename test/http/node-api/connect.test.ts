// Node API /connect: the client's originating address is an IP address as the reference takes it
// (PHP's FILTER_VALIDATE_IP: no zone), refused with 400 otherwise, and nothing written, on
// either database (PostgreSQL's column refused a long zone that SQLite kept).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { connectionHistory } from '../../../src/storage/connection-log.js';
import { openVpnConfiguration, openVpnEmployees } from '../../support/openvpn-sessions.js';
import { startTestPortal } from '../../support/test-portal.js';

test('an originating address with a zone is refused with 400 and no session is logged; one without is taken', async (t) => {
  const portal = await startTestPortal({ config: openVpnEmployees });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  const commonName = await openVpnConfiguration(portal, 'kim');
  const connect = (originatingIp: string) =>
    portal
      .request(`${portal.nodeApiUrl}/connect`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.keys.nodeSecret(asNodeNumber(0)) ?? ''}`, 'x-node-number': '0' },
        body: new URLSearchParams({
          profile_id: 'employees',
          common_name: commonName,
          originating_ip: originatingIp,
          ip_four: '10.60.0.2',
          ip_six: 'fd60::1000',
        }),
      })
      .then((answer) => `${answer.status} ${answer.text}`);

  for (const address of ['fe80::1%eth0', `fe80::1%${'a'.repeat(100)}`])
    assert.equal(await connect(address), '400 {"error":"invalid value for \\"originating_ip\\""}', address);
  assert.deepEqual(await connectionHistory(ctx.db, commonName), [], 'no session was logged');
  assert.equal(await connect('2001:db8::7'), '200 OK');
});
