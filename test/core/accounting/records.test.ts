// What each accounting record of a session says: the Start from the session (the node's address
// where the configuration names it by address, the profile and device as Class), the
// Interim-Update and Stop from that Start with the time since, the counters and why it ended; an
// interim carries the latest counters observed, in Octets and Gigawords, and none before any were.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { interimRecord, forServer, startRecord, stopRecord, withCounters } from '../../../src/core/accounting/index.js';
import { resolvePortalConfig } from '../../../src/config/load.js';
import { ATTRIBUTE, encodeAccountingRequest } from '../../../src/protocol/radius.js';
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

test('a user id over 253 octets stays whole in the records, as the audit row of a dropped one names the user; only what is sent is cut', () => {
  const userId = '😀'.repeat(64);
  const start = startRecord(configWith('vpn.example.org', 'http://10.0.0.8:41194'), { ...session, userId });
  const stop = stopRecord(start, session.at, { at: session.at, bytesIn: 1, bytesOut: 2, cause: 'idle' });
  assert.deepEqual([start.userName, stop.userName], [userId, userId]);
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

test('an interim carries the latest counters observed as Octets and Gigawords, and none before any were', () => {
  const start = startRecord(configWith('vpn.example.org', 'http://10.0.0.8:41194'), session);
  const later = new Date(session.at.getTime() + 60_000);
  const integers = (record: ReturnType<typeof startRecord>) => {
    const { packet } = encodeAccountingRequest(record, { identifier: 1, secret: Buffer.from('s'), delaySeconds: 0 });
    const found = new Map<number, number>();
    for (let at = 20; at < packet.length; at += packet.readUInt8(at + 1)) {
      if (packet.readUInt8(at + 1) === 6) found.set(packet.readUInt8(at), packet.readUInt32BE(at + 2));
    }
    return found;
  };
  const bare = integers(interimRecord(start, session.at, later));
  assert.equal(bare.has(ATTRIBUTE.acctInputOctets), false);
  assert.equal(bare.has(ATTRIBUTE.acctOutputOctets), false);
  const counted = integers(
    interimRecord(withCounters(start, { bytesIn: 5 * 2 ** 32 + 7, bytesOut: 1234 }), session.at, later),
  );
  assert.equal(counted.get(ATTRIBUTE.acctInputOctets), 7);
  assert.equal(counted.get(ATTRIBUTE.acctInputGigawords), 5);
  assert.equal(counted.get(ATTRIBUTE.acctOutputOctets), 1234);
  assert.equal(counted.has(ATTRIBUTE.acctOutputGigawords), false, 'under 4 GiB: no Gigawords');
  assert.equal(counted.get(ATTRIBUTE.acctStatusType), 3, 'still an Interim-Update');
  const stop = stopRecord(withCounters(start, { bytesIn: 1, bytesOut: 2 }), session.at, {
    at: later,
    bytesIn: 9,
    bytesOut: 8,
    cause: 'idle',
  });
  assert.deepEqual([stop.inputOctets, stop.outputOctets], [9, 8], "the Stop has the end's counters");
});
