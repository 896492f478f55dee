// What each accounting record of a session says: the Start from the session (the node's address
// where the configuration names it by address, the profile and device as Class), the
// Interim-Update and Stop from that Start with the time since, the counters and why it ended.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { interimRecord, forServer, startRecord, stopRecord } from '../../../src/core/accounting/index.js';
import { resolvePortalConfig } from '../../../src/config/load.js';
import { Secret } from '../../../src/shared/secret.js';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { defaultTestConfig } from '../../support/test-portal.js';

const profile = defaultTestConfig.ProfileList[0];
const configWith = (hostName: string, nodeUrl: string) =>
  resolvePortalConfig({ ...defaultTestConfig, ProfileList: [{ ...profile, hostName, nodeUrl }] }, 'test configuration');
const session = {
  acctSessionId: 'session-1',
  userId: 'frank',
  profileId: 'employees',
  deviceId: null,
  nodeNumber: asNodeNumber(0),
  ipFour: '10.44.0.5',
  ipSix: 'fd44::5',
  originatingIp: null,
  at: new Date('2026-11-29T08:00:00Z'),
};

test("NAS-IP-Address is the node's host name when it is an address, else its vpn-daemon URL's host, else none", () => {
  assert.equal(startRecord(configWith('192.0.2.8', 'http://10.0.0.8:41194'), session).nasIpAddress, '192.0.2.8');
  assert.equal(startRecord(configWith('vpn.example.org', 'http://[fd00::8]:41194'), session).nasIpAddress, 'fd00::8');
  const named = startRecord(configWith('vpn.example.org', 'http://node8.internal:41194'), session);
  assert.equal(named.nasIpAddress, null);
  assert.equal(named.nasIdentifier, 'vpn.example.org', 'the node still named');
});

test('a device follows the profile as a second Class, and a missing address is left out', () => {
  const config = configWith('vpn.example.org', 'http://10.0.0.8:41194');
  const record = startRecord(config, { ...session, deviceId: 'dev-9', ipSix: '' });
  assert.deepEqual(record.classes, ['employees', 'device=dev-9']);
  assert.equal(record.framedIpv6Address, null);
  assert.equal(record.callingStationId, null);
});

test('interim and stop repeat the start with the time since, and the stop says why and how much', () => {
  const start = startRecord(configWith('vpn.example.org', 'http://10.0.0.8:41194'), session);
  const interim = interimRecord(start, session.at, new Date(session.at.getTime() + 600_000));
  assert.equal(interim.statusType, 'Interim-Update');
  assert.equal(interim.sessionTime, 600);
  assert.equal(interim.inputOctets, undefined, 'no counters between passes');
  const causes = (['idle', 'roamed', 'removed', 'lost', 'disconnected'] as const).map(
    (cause) => stopRecord(start, session.at, { at: session.at, bytesIn: 5, bytesOut: 6, cause }).terminateCause,
  );
  assert.deepEqual(causes, ['Idle-Timeout', 'Lost-Carrier', 'Admin-Reset', 'Lost-Service', 'User-Request']);
  const server = { address: 'r:1813', host: 'r', port: 1813, secret: new Secret('s') };
  assert.equal(forServer(start, { ...server, nasIdentifier: 'campus-vpn' }).nasIdentifier, 'campus-vpn');
  assert.equal(forServer(start, { ...server, nasIdentifier: null }).nasIdentifier, 'vpn.example.org');
});
