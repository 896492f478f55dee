// Syslog for SIEMs and firewalls, end to end: a real portal with a TCP and a UDP collector, both a
// real rsyslog (test/support/rsyslog.ts). An OpenVPN client of a registered device connects and
// disconnects through the Node API, as a node reports it; rsyslog receives a start and a stop
// over each transport as RFC 5424 (its own parser's fields, the structured data parsed by
// mmpstrucdata), and the regular expression docs/accountability.md gives firewalls, read from
// that page, takes every field out of the text. A client the connect script refuses was never
// recorded, so nothing of it is sent. With rsyslog stopped, the portal's metrics show the
// collector away, its queue full and the overflow dropped, and the queue leaves once it is back.
// Deterministic NAT: a mapping is recorded in the history through the event path the nodes'
// reports take (recordNodeNat, which announces `node.nat_changed`), and the sessions of that
// node then name their public address and port block. A portal that stops sends the messages
// still being made before its collectors close. A message that cannot be made (a
// collector throws) is logged, and the messages after it still leave, with no rejection left
// unhandled to end the portal. A stop names the device of its own configuration only: not that of a
// later configuration of the same WireGuard key, another user's.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { PortalEvents } from '../../src/core/events.js';
import { recordNodeNat } from '../../src/core/nodes/index.js';
import type { SyslogCollector } from '../../src/core/syslog/index.js';
import { sendSessionsToSyslog } from '../../src/listeners/syslog-sessions.js';
import type { NatChangeRecord, SessionRecord } from '../../src/protocol/syslog.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { formatAtom } from '../../src/shared/time.js';
import type { Db } from '../../src/storage/database.js';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';
import { twoProfiles } from '../support/admin-keys.js';
import { handLaptopToFrank } from '../support/device-keys.js';
import { openVpnEmployees } from '../support/openvpn-sessions.js';
import { startRsyslog, type ReceivedMessage } from '../support/rsyslog.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';
import { until } from '../support/until.js';

/** A regular expression of the docs, from its ```regex blocks: the first for sessions, the second for NAT changes. */
function documentedPattern(which: 'session' | 'nat' = 'session'): RegExp {
  const page = readFileSync(new URL('../../docs/accountability.md', import.meta.url), 'utf8');
  const blocks = [...page.matchAll(/```regex\n(.+)\n```/g)].map((match) => match[1]);
  const block = blocks[which === 'session' ? 0 : 1];
  assert.ok(block !== undefined, `docs/accountability.md has the ${which} regex block`);
  return new RegExp(block);
}

function nodeApi(portal: TestPortal, call: 'connect' | 'disconnect', form: Record<string, string>) {
  return portal.request(`${portal.nodeApiUrl}/${call}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${portal.portal.ctx.keys.nodeSecret(asNodeNumber(0)) ?? ''}`,
      'x-node-number': '0',
    },
    body: new URLSearchParams(form),
  });
}

test('a session start and stop reach rsyslog over TCP and UDP as RFC 5424 with parsed structured data, and the documented expression reads the text; a refused client sends nothing', async (t) => {
  const rsyslog = await startRsyslog();
  // A connect script that refuses mallory: her session is never recorded, so never sent.
  const scripts = mkdtempSync(path.join(tmpdir(), 'syslog-sessions-'));
  const script = path.join(scripts, 'refuse-mallory.sh');
  writeFileSync(script, '#!/bin/sh\n[ "$VPN_USER_ID" != mallory ]\n', { mode: 0o755 });
  const portal = await startTestPortal({
    config: {
      ...openVpnEmployees,
      connectScriptPath: script,
      // The TCP collector is told the client's address because the portal keeps it.
      Log: { originatingIp: true },
      accounting: {
        syslog: {
          enterpriseNumber: 99999,
          collectors: [
            { transport: 'tcp', address: `127.0.0.1:${rsyslog.tcpPort}`, hostname: 'portal.example.org' },
            {
              transport: 'udp',
              address: `127.0.0.1:${rsyslog.udpPort}`,
              facility: 'local5',
              appName: 'vpn-test',
              clientAddress: false,
            },
          ],
        },
      },
    },
  });
  t.after(async () => {
    await portal.close();
    await rsyslog.close();
    rmSync(scripts, { recursive: true, force: true });
  });
  const device = await portal.admin.registerDevice({
    user_id: 'alice@example.org',
    profile_id: 'employees',
    platform: 'windows',
    serial: 'SN-1',
  });
  await portal.admin.create(
    { user_id: 'alice@example.org', profile_id: 'employees', device_id: device.device_id },
    'application/x-openvpn-profile',
  );
  const [configuration] = await portal.admin.userConfigurationList('alice@example.org');
  const connectionId = configuration?.connection_id ?? '';
  const addresses = { originating_ip: '198.51.100.7', ip_four: '10.60.0.2', ip_six: 'fd60::2' };
  assert.equal(
    (await nodeApi(portal, 'connect', { profile_id: 'employees', common_name: connectionId, ...addresses })).text,
    'OK',
  );
  await portal.admin.create({ user_id: 'mallory', profile_id: 'employees' }, 'application/x-openvpn-profile');
  const [refused] = await portal.admin.userConfigurationList('mallory');
  const malloryConnect = { profile_id: 'employees', common_name: refused?.connection_id ?? '', ip_four: '10.60.0.3' };
  assert.equal((await nodeApi(portal, 'connect', malloryConnect)).text, 'ERR', 'the script refused mallory');
  assert.equal(
    (await nodeApi(portal, 'disconnect', { common_name: connectionId, bytes_in: '1200', bytes_out: '3400' })).text,
    'OK',
  );

  // Messages leave in the order of their events: had mallory's refused start been sent, it would
  // have arrived before alice's stop.
  const received = await rsyslog.waitFor(4);
  assert.deepEqual(
    received.filter((message) => message.msg.includes('mallory')),
    [],
    'nothing of a session that was refused',
  );
  const over = (transport: string) => received.filter((message) => message.transport === transport);
  for (const [transport, messages] of [
    ['tcp', over('tcp')],
    ['udp', over('udp')],
  ] as const) {
    assert.deepEqual(
      messages.map((message) => message.msgId),
      ['SESSION_START', 'SESSION_STOP'],
      transport,
    );
    for (const message of messages) checkMessage(message, transport, connectionId, device.device_id);
  }
  const [tcpStart] = over('tcp');
  assert.equal(tcpStart?.pri, String(10 * 8 + 6), 'authpriv, informational');
  assert.equal(tcpStart?.hostname, 'portal.example.org');
  assert.equal(tcpStart?.appName, 'vpn-portal');
  assert.equal(tcpStart?.procId, String(process.pid), 'the portal runs in this process');
  const [udpStart] = over('udp');
  assert.equal(udpStart?.pri, String(21 * 8 + 6), 'local5');
  assert.equal(udpStart?.appName, 'vpn-test');
  assert.deepEqual(
    over('tcp').map((message) => [
      message.sd['vpnSession@99999']?.['bytes_in'],
      message.sd['vpnSession@99999']?.['bytes_out'],
    ]),
    [
      [undefined, undefined],
      ['1200', '3400'],
    ],
    'the stop carries the traffic',
  );

  const metrics = await (await fetch(portal.portal.metricsUrl ?? '')).text();
  assert.match(
    metrics,
    new RegExp(`vpn_portal_syslog_messages_sent_total\\{collector="tcp://127.0.0.1:${rsyslog.tcpPort}"\\} 2`),
  );
  assert.match(
    metrics,
    new RegExp(`vpn_portal_syslog_collector_up\\{collector="tcp://127.0.0.1:${rsyslog.tcpPort}"\\} 1`),
  );
  assert.match(
    metrics,
    /vpn_portal_syslog_messages_dropped_total\{collector="udp:\/\/127\.0\.0\.1:\d+",reason="queue-full"\} 0/,
  );
});

test('with the collector away the portal queues what its queue holds, counts the rest as dropped, and sends the queue once the collector is back', async (t) => {
  const rsyslog = await startRsyslog();
  const collector = `tcp://127.0.0.1:${rsyslog.tcpPort}`;
  const portal = await startTestPortal({
    config: {
      ...openVpnEmployees,
      accounting: {
        syslog: { collectors: [{ transport: 'tcp', address: `127.0.0.1:${rsyslog.tcpPort}`, queueSize: 2 }] },
      },
    },
  });
  t.after(async () => {
    await portal.close();
    await rsyslog.close();
  });
  const metric = async (name: string, labels = ''): Promise<number> => {
    const text = await (await fetch(portal.portal.metricsUrl ?? '')).text();
    const line = text
      .split('\n')
      .find((candidate) => candidate.startsWith(`${name}{collector="${collector}"${labels}} `));
    return Number(line?.split(' ')[1]);
  };
  const users = ['u1', 'u2', 'u3', 'u4'];
  const ids = new Map<string, string>();
  for (const user of users) {
    await portal.admin.create({ user_id: user, profile_id: 'employees' }, 'application/x-openvpn-profile');
    ids.set(user, (await portal.admin.userConfigurationList(user))[0]?.connection_id ?? '');
  }
  const connect = async (user: string, index: number) => {
    const form = { profile_id: 'employees', common_name: ids.get(user) ?? '', ip_four: `10.60.0.${index + 2}` };
    assert.equal((await nodeApi(portal, 'connect', form)).text, 'OK');
  };
  await connect('u1', 0);
  await rsyslog.waitFor(1);
  assert.equal(await metric('vpn_portal_syslog_collector_up'), 1);

  await rsyslog.stop();
  await until('the portal sees the collector away', async () => (await metric('vpn_portal_syslog_collector_up')) === 0);
  for (const [index, user] of users.slice(1).entries()) await connect(user, index + 1);
  await until('two queued, one dropped', async () => (await metric('vpn_portal_syslog_queue_messages')) === 2);
  assert.equal(await metric('vpn_portal_syslog_messages_dropped_total', ',reason="queue-full"'), 1);

  await rsyslog.start();
  const received = await rsyslog.waitFor(3, 60_000);
  assert.deepEqual(
    received.map((message) => message.sd['vpnSession@32473']?.['user_id']),
    ['u1', 'u2', 'u3'],
    'the queue in order; u4 found it full',
  );
  await until('the queue is sent', async () => (await metric('vpn_portal_syslog_queue_messages')) === 0);
  assert.equal(await metric('vpn_portal_syslog_messages_sent_total'), 3);
});

test('behind a deterministic NAT the sessions name their public address and port block, and each mapping change is a message of its own', async (t) => {
  const rsyslog = await startRsyslog();
  const portal = await startTestPortal({
    config: {
      ...openVpnEmployees,
      accounting: { syslog: { collectors: [{ transport: 'tcp', address: `127.0.0.1:${rsyslog.tcpPort}` }] } },
    },
  });
  t.after(async () => {
    await portal.close();
    await rsyslog.close();
  });
  const { ctx } = portal.portal;
  const hourAgo = new Date(Date.now() - 3_600_000);
  // 256 ports a client from port 1024: the fourth client (10.60.0.5) has ports 1792–2047 of the first address.
  const deterministic = {
    mode: 'deterministic' as const,
    applied_at: hourAgo.toISOString(),
    ranges: ['10.60.0.0/24'],
    public_addresses: ['203.0.113.2', '203.0.113.1'],
    ports_per_client: 256,
  };
  assert.equal(await recordNodeNat(ctx, asNodeNumber(0), deterministic), true);
  await portal.admin.create({ user_id: 'bob', profile_id: 'employees' }, 'application/x-openvpn-profile');
  const connectionId = (await portal.admin.userConfigurationList('bob'))[0]?.connection_id ?? '';
  const session = { profile_id: 'employees', common_name: connectionId, ip_four: '10.60.0.5', ip_six: 'fd60::5' };
  assert.equal((await nodeApi(portal, 'connect', session)).text, 'OK');
  assert.equal(
    (await nodeApi(portal, 'disconnect', { common_name: connectionId, bytes_in: '0', bytes_out: '0' })).text,
    'OK',
  );
  // The stop is made when its event is told, by the mapping in force at its second: wait for it,
  // or the masquerade below (dated a second back, so that the next start is surely under it)
  // could be in force at the stop's second too by the time the stop is made.
  await rsyslog.waitFor(3);
  // The node then masquerades: the next session has no block to name.
  const masqueradeFrom = new Date(Date.now() - 1000);
  assert.equal(
    await recordNodeNat(ctx, asNodeNumber(0), { mode: 'masquerade', applied_at: masqueradeFrom.toISOString() }),
    true,
  );
  assert.equal((await nodeApi(portal, 'connect', session)).text, 'OK');

  const received = await rsyslog.waitFor(5);
  assert.deepEqual(
    received.map((message) => message.msgId),
    ['NAT_CHANGE', 'SESSION_START', 'SESSION_STOP', 'NAT_CHANGE', 'SESSION_START'],
    'in the order of their events',
  );
  const [change, start, stop, masquerade, unmapped] = received;
  assert.equal(change?.pri, String(10 * 8 + 5), 'authpriv, notice');
  assert.deepEqual(change?.sd['vpnNat@32473'], {
    node_number: '0',
    mode: 'deterministic',
    public_addresses: '203.0.113.1,203.0.113.2',
    ports_per_client: '256',
    applied_at: hourAgo.toISOString(),
    part: '1',
    parts: '1',
  });
  assert.deepEqual(
    documentedPattern('nat')
      .exec(change?.msg ?? '')
      ?.slice(1),
    ['0', 'deterministic', '203.0.113.1,203.0.113.2', '256', hourAgo.toISOString(), '1', '1'],
  );
  for (const message of [start, stop]) {
    const sd = message?.sd['vpnSession@32473'];
    assert.deepEqual(
      [sd?.['nat_public_ip'], sd?.['nat_port_first'], sd?.['nat_port_last']],
      ['203.0.113.1', '1792', '2047'],
      `${message?.msgId}: the structured data`,
    );
    assert.deepEqual(
      documentedPattern()
        .exec(message?.msg ?? '')
        ?.slice(7),
      ['10.60.0.5', 'fd60::5', '-', connectionId, '203.0.113.1', '1792-2047'],
      `${message?.msgId}: the text`,
    );
  }
  assert.deepEqual(
    documentedPattern('nat')
      .exec(masquerade?.msg ?? '')
      ?.slice(1),
    ['0', 'masquerade', '-', '-', masqueradeFrom.toISOString(), '1', '1'],
  );
  assert.equal(masquerade?.sd['vpnNat@32473']?.['public_addresses'], undefined);
  assert.equal(unmapped?.sd['vpnSession@32473']?.['nat_public_ip'], undefined);
  assert.deepEqual(
    documentedPattern()
      .exec(unmapped?.msg ?? '')
      ?.slice(11),
    ['-', '-'],
    'no block under masquerading',
  );
});

test('a portal stopping while a session message is being made sends it before its collectors close', async (t) => {
  const rsyslog = await startRsyslog();
  const portal = await startTestPortal({
    config: {
      ...openVpnEmployees,
      accounting: { syslog: { collectors: [{ transport: 'tcp', address: `127.0.0.1:${rsyslog.tcpPort}` }] } },
    },
  });
  t.after(async () => {
    await portal.close();
    await rsyslog.close();
  });
  await portal.admin.create({ user_id: 'bob', profile_id: 'employees' }, 'application/x-openvpn-profile');
  const connectionId = (await portal.admin.userConfigurationList('bob'))[0]?.connection_id ?? '';
  // The message's read of the NAT history (the last step of making it) stands still until released.
  const { db } = portal.portal.ctx;
  let release = (): void => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let reached = false;
  const heldRead = {
    selectAll: () => heldRead,
    where: () => heldRead,
    orderBy: () => heldRead,
    limit: () => heldRead,
    executeTakeFirst: async () => {
      reached = true;
      await released;
      return undefined;
    },
  };
  const selectFrom = db.selectFrom.bind(db);
  t.mock.method(db, 'selectFrom', (table: string) =>
    table === 'nat_mappings' ? heldRead : selectFrom(table as Parameters<typeof selectFrom>[0]),
  );
  const session = { profile_id: 'employees', common_name: connectionId, ip_four: '10.60.0.5', ip_six: 'fd60::5' };
  assert.equal((await nodeApi(portal, 'connect', session)).text, 'OK');
  await until('the message is being made', async () => reached);

  const closing = portal.close();
  await new Promise((resolve) => setTimeout(resolve, 300));
  release();
  await closing;
  const [start] = await rsyslog.waitFor(1, 5_000);
  assert.equal(start?.msgId, 'SESSION_START');
  assert.equal(start?.sd['vpnSession@32473']?.['user_id'], 'bob');
});

test('a NAT change message a collector cannot make is logged, and neither holds back the messages after it nor leaves a rejection unhandled', async (t) => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  t.after(() => process.off('unhandledRejection', onUnhandled));
  const logged: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(line) });
  const events = new PortalEvents(logger);
  const told: number[] = [];
  // A collector whose first NAT change message cannot be made (a RangeError of the formatting).
  const collector = {
    sendNatChange(record: NatChangeRecord) {
      if (record.nodeNumber === 1) throw new RangeError('not a message');
      told.push(record.nodeNumber);
    },
  } as unknown as SyslogCollector;
  // NAT changes read nothing from the database.
  sendSessionsToSyslog(events, {} as Db, [collector], logger);
  const change = (nodeNumber: number) => ({
    type: 'node.nat_changed' as const,
    at: new Date(),
    nodeNumber: asNodeNumber(nodeNumber),
    appliedAt: new Date(),
    mapping: { mode: 'masquerade' as const },
  });
  events.publish(change(1));
  await new Promise((resolve) => setTimeout(resolve, 50));
  events.publish(change(2));
  await until('the next change is told', async () => told.length > 0);
  assert.deepEqual(told, [2]);
  assert.deepEqual(unhandled, [], 'no rejection left unhandled (Node ends the portal on one)');
  assert.ok(logged.some((line) => line.includes('a syslog message was not made')));
});

test('a stop that comes after the session’s WireGuard key went to another user’s configuration names no device, not that user’s', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(() => portal.close());
  const accept = { accept: 'application/x-wireguard-profile' };
  // erin's laptop has its own key. She is destroyed while her node does not answer, so her
  // session is still open; the laptop goes to frank, who enrolls it with the same key.
  const { publicKey } = generateWireGuardKeyPair();
  const erins = await portal.post(
    '/create',
    { user_id: 'erin', profile_id: 'employees', public_key: publicKey },
    accept,
  );
  assert.equal(erins.status, 200, erins.text);
  assert.equal((await portal.post('/destroy', { user_id: 'erin' })).status, 204);
  await handLaptopToFrank(portal, publicKey);

  const logger = pino({ level: 'silent' });
  const events = new PortalEvents(logger);
  const told: SessionRecord[] = [];
  const collector = {
    sendSession(record: SessionRecord) {
      told.push(record);
    },
  } as unknown as SyslogCollector;
  sendSessionsToSyslog(events, portal.portal.ctx.db, [collector], logger);
  // The node answers again and takes erin's removal: her session stops now.
  events.publish({
    type: 'session.ended',
    at: new Date(),
    connectionId: publicKey,
    vpnProto: 'wireguard',
    nodeNumber: asNodeNumber(0),
    bytesIn: 100,
    bytesOut: 200,
    cause: 'removed',
    session: {
      userId: 'erin',
      profileId: 'employees',
      ipFour: '10.44.0.2',
      ipSix: 'fd44::2',
      originatingIp: null,
      connectedAt: formatAtom(new Date(Date.now() - 3_600_000)),
    },
  });
  await until('the stop is made', async () => told.length > 0);
  assert.deepEqual(
    told.map((record) => [record.event, record.userId, record.deviceId]),
    [['stop', 'erin', null]],
    'erin’s configuration is gone: her stop names no device, not frank’s',
  );
});

function checkMessage(message: ReceivedMessage, transport: string, connectionId: string, deviceId: string): void {
  // The UDP collector is told no client address (`clientAddress: false`).
  const client = transport === 'udp' ? undefined : '198.51.100.7';
  const event = message.msgId === 'SESSION_START' ? 'start' : 'stop';
  assert.equal(message.version, '1', `${transport}: rsyslog read it as RFC 5424`);
  assert.deepEqual(
    { ...message.sd['vpnSession@99999'], bytes_in: undefined, bytes_out: undefined },
    {
      event,
      user_id: 'alice@example.org',
      device_id: deviceId,
      profile_id: 'employees',
      node_number: '0',
      vpn_proto: 'openvpn',
      connection_id: connectionId,
      ip_four: '10.60.0.2',
      ip_six: 'fd60::2',
      ...(client === undefined ? {} : { originating_ip: client }),
      bytes_in: undefined,
      bytes_out: undefined,
    },
    `${transport}: the structured data as rsyslog parsed it`,
  );
  assert.deepEqual(documentedPattern().exec(message.msg)?.slice(1), [
    event,
    'alice@example.org',
    deviceId,
    'employees',
    '0',
    'openvpn',
    '10.60.0.2',
    'fd60::2',
    client ?? '-',
    connectionId,
    '-',
    '-',
  ]);
  assert.ok(Buffer.byteLength(message.msg) <= 2048);
}
