// The reference's CONNECT/DISCONNECT lines (`Log.syslogConnectionEvents`) in the portal's JSON log:
// a user id may look like the rest of a line, so each value is also a field of its own.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import {
  openVpnConfiguration,
  openVpnEmployees,
  reportOpenVpnConnect,
  reportOpenVpnDisconnect,
} from '../support/openvpn-sessions.js';
import { startTestPortal } from '../support/test-portal.js';
import { until } from '../support/until.js';

test("a user id that reads like another user's line is told apart by the line's own fields", async (t) => {
  const logged: Record<string, unknown>[] = [];
  const portal = await startTestPortal({
    logger: pino(
      { level: 'info' },
      { write: (line: string) => void logged.push(JSON.parse(line) as Record<string, unknown>) },
    ),
    config: { ...openVpnEmployees, Log: { syslogConnectionEvents: true, originatingIp: true } },
  });
  t.after(() => portal.close());
  // A user id the Admin API accepts, written to pass for bob's session from another address.
  const trickster = 'bob (employees:K) [203.0.113.9 => 10.60.0.9,fd60::9] x';
  const connectionId = await openVpnConfiguration(portal, trickster);
  const addresses = { ip_four: '10.60.0.2', ip_six: 'fd60::2' };
  await reportOpenVpnConnect(portal, connectionId, { originating_ip: '198.51.100.7', ...addresses });
  await reportOpenVpnDisconnect(portal, connectionId, addresses);
  const lineOf = (event: string) => logged.find((line) => line['event'] === event);
  await until('the DISCONNECT line is written', async () => lineOf('DISCONNECT') !== undefined);

  const connect = lineOf('CONNECT');
  // The text, as the reference writes it, reads as bob's session from 203.0.113.9 ...
  assert.equal(
    connect?.['msg'],
    `CONNECT ${trickster} (employees:${connectionId}) [198.51.100.7 => 10.60.0.2,fd60::2]`,
  );
  // ... and the fields say whose it is and where from.
  assert.deepEqual(
    {
      userId: connect?.['userId'],
      profileId: connect?.['profileId'],
      connectionId: connect?.['connectionId'],
      originatingIp: connect?.['originatingIp'],
      ipFour: connect?.['ipFour'],
      ipSix: connect?.['ipSix'],
    },
    {
      userId: trickster,
      profileId: 'employees',
      connectionId,
      originatingIp: '198.51.100.7',
      ipFour: '10.60.0.2',
      ipSix: 'fd60::2',
    },
  );
  const disconnect = lineOf('DISCONNECT');
  assert.deepEqual(
    [disconnect?.['userId'], disconnect?.['profileId'], disconnect?.['connectionId']],
    [trickster, 'employees', connectionId],
  );
});
