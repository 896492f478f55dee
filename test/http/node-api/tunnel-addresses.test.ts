// Node API /connect and /disconnect: the tunnel addresses a node reports are an IPv4 and an
// IPv6 address within the profile's OpenVPN ranges on that node. Others are refused with 400
// before anything is written, so no false session answers a lookup of that address.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { connectionHistory } from '../../../src/storage/connection-log.js';
import { openVpnConfiguration, openVpnEmployees } from '../../support/openvpn-sessions.js';
import { startTestPortal } from '../../support/test-portal.js';

test('tunnel addresses of the wrong family or outside the OpenVPN ranges are refused with 400, and nothing is written', async (t) => {
  const portal = await startTestPortal({ config: openVpnEmployees });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  const commonName = await openVpnConfiguration(portal, 'kim');
  const nodeApi = (call: string, form: Record<string, string>) =>
    portal
      .request(`${portal.nodeApiUrl}/${call}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${ctx.keys.nodeSecret(asNodeNumber(0)) ?? ''}`,
          'x-node-number': '0',
        },
        body: new URLSearchParams({ profile_id: 'employees', common_name: commonName, ...form }),
      })
      .then((answer) => `${answer.status} ${answer.text}`);
  const connect = (ipFour: string, ipSix = 'fd60::1000') =>
    nodeApi('connect', { originating_ip: '192.0.2.10', ip_four: ipFour, ip_six: ipSix });
  const invalid = (name: string) => `400 {"error":"invalid value for \\"${name}\\""}`;
  const outside = (name: string) =>
    `400 {"error":"invalid value for \\"${name}\\": not in the OpenVPN range of profile \\"employees\\" on this node"}`;

  assert.equal(await connect('fd60::5'), invalid('ip_four'), 'an IPv6 address as ip_four');
  assert.equal(await connect('10.60.0.2', '10.60.0.3'), invalid('ip_six'), 'an IPv4 address as ip_six');
  assert.equal(await connect('10.60.0.2', 'fe80::1%eth0'), invalid('ip_six'), 'an address with a zone');
  assert.equal(await connect('192.0.2.99'), outside('ip_four'), 'outside 10.60.0.0/24');
  assert.equal(await connect('10.60.0.2', 'fd99::2'), outside('ip_six'), 'outside fd60::/64');
  assert.deepEqual(await connectionHistory(ctx.db, commonName), [], 'no session was logged');

  assert.equal(await connect('10.60.0.2'), '200 OK');
  const disconnect = (ipFour: string) => nodeApi('disconnect', { ip_four: ipFour, bytes_in: '1', bytes_out: '2' });
  assert.equal(await disconnect('fd60::2'), invalid('ip_four'));
  assert.equal(await disconnect('10.61.0.2'), outside('ip_four'));
  assert.deepEqual(
    (await connectionHistory(ctx.db, commonName)).map((entry) => [entry.ipFour, entry.disconnectedAt !== null]),
    [['10.60.0.2', false]],
    'the session is still open',
  );
  assert.equal(await disconnect('10.60.0.2'), '200 OK');
});
