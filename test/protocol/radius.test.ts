// The RADIUS accounting encoder and response check against the real peers: the bytes radclient
// (FreeRADIUS's own client) sends for the same attributes, and a real FreeRADIUS that accepts the
// portal's requests with the shared secret, refuses them without it, and writes what it got.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { after, before, describe, test } from 'node:test';
import {
  ATTRIBUTE,
  accountingRecordSchema,
  checkAccountingResponse,
  encodeAccountingRequest,
  type AccountingRecord,
  type EncodedRequest,
} from '../../src/protocol/radius.js';
import { detailRecord, startFreeRadius, type FreeRadius } from '../support/freeradius.js';
import { until } from '../support/until.js';

const RECORD: AccountingRecord = {
  statusType: 'Stop',
  sessionId: '0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
  userName: 'alice@example.org',
  framedIpAddress: '198.19.44.2',
  framedIpv6Address: 'fd00:44::2',
  callingStationId: '192.0.2.77',
  nasIdentifier: 'vpn-node-0',
  nasIpAddress: '192.0.2.1',
  eventTimestamp: 1_790_000_000,
  classes: ['employees', 'device=d-123'],
  sessionTime: 3_725,
  inputOctets: 5 * 2 ** 32 + 17,
  outputOctets: 123_456,
  terminateCause: 'Idle-Timeout',
};

/** The same attributes as radclient reads them, in the encoder's order. */
const RADCLIENT_INPUT = [
  'Acct-Status-Type = Stop',
  `Acct-Session-Id = "${RECORD.sessionId}"`,
  `User-Name = "${RECORD.userName}"`,
  'NAS-Identifier = "vpn-node-0"',
  'NAS-IP-Address = 192.0.2.1',
  'NAS-Port-Type = Virtual',
  'Framed-IP-Address = 198.19.44.2',
  'Framed-IPv6-Address = fd00:44::2',
  'Calling-Station-Id = "192.0.2.77"',
  'Class = "employees"',
  'Class = "device=d-123"',
  'Event-Timestamp = 1790000000',
  'Acct-Delay-Time = 42',
  'Acct-Session-Time = 3725',
  `Acct-Input-Octets = 17`,
  'Acct-Input-Gigawords = 5',
  'Acct-Output-Octets = 123456',
  'Acct-Terminate-Cause = Idle-Timeout',
].join(', ');

async function boundSocket(): Promise<Socket> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return socket;
}

/** Sends `request` to FreeRADIUS and answers the first datagram back, or null after `ms`. */
async function exchange(radius: FreeRadius, request: EncodedRequest, ms: number): Promise<Buffer | null> {
  const socket = await boundSocket();
  try {
    return await new Promise<Buffer | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), ms);
      socket.once('message', (message) => {
        clearTimeout(timer);
        resolve(message);
      });
      socket.send(request.packet, radius.port, radius.host);
    });
  } finally {
    socket.close();
  }
}

describe('RADIUS accounting requests', () => {
  let radius: FreeRadius;
  before(async () => {
    radius = await startFreeRadius();
  });
  after(async () => {
    await radius?.close();
  });

  test('an Accounting-Request is byte for byte what radclient sends for the same attributes', async () => {
    const server = await boundSocket();
    const { port } = server.address();
    const received = new Promise<Buffer>((resolve) => server.once('message', resolve));
    const secret = 'a shared secret';
    // radclient waits for an answer that never comes; its packet is all the test needs.
    const child = execFile('sh', [
      '-c',
      `echo '${RADCLIENT_INPUT}' | radclient -r 1 -t 2 -q 127.0.0.1:${port} acct '${secret}'`,
    ]);
    try {
      const packet = await received;
      const ours = encodeAccountingRequest(RECORD, {
        identifier: packet.readUInt8(1),
        secret: Buffer.from(secret),
        delaySeconds: 42,
      });
      assert.equal(ours.packet.toString('hex'), packet.toString('hex'));
    } finally {
      child.kill();
      server.close();
    }
  });

  test('FreeRADIUS accepts a request signed with the shared secret, and its response passes the check', async () => {
    const secret = Buffer.from(radius.secret);
    const request = encodeAccountingRequest(RECORD, { identifier: 7, secret, delaySeconds: 3 });
    const response = await exchange(radius, request, 10_000);
    assert.ok(response !== null, 'FreeRADIUS answered');
    assert.deepEqual(checkAccountingResponse(response, request, secret), { kind: 'accepted' });
    assert.equal(checkAccountingResponse(response, request, Buffer.from('another secret')).kind, 'invalid');
    const other = encodeAccountingRequest(RECORD, { identifier: 8, secret, delaySeconds: 3 });
    assert.deepEqual(checkAccountingResponse(response, other, secret), { kind: 'other' }, 'another identifier');
    const tampered = Buffer.from(response);
    tampered.writeUInt8(tampered.readUInt8(5) ^ 1, 5);
    assert.equal(checkAccountingResponse(tampered, request, secret).kind, 'invalid');

    const written = await detailRecord(
      radius,
      'the Stop in the detail file',
      (entry) => entry['Acct-Session-Id'] === RECORD.sessionId,
    );
    assert.equal(written['Acct-Status-Type'], 'Stop');
    assert.equal(written['User-Name'], 'alice@example.org');
    assert.equal(written['Framed-IP-Address'], '198.19.44.2');
    assert.equal(written['Framed-IPv6-Address'], 'fd00:44::2');
    assert.equal(written['Calling-Station-Id'], '192.0.2.77');
    assert.equal(written['NAS-IP-Address'], '192.0.2.1');
    assert.equal(written['NAS-Identifier'], 'vpn-node-0');
    assert.equal(written['Acct-Session-Time'], '3725');
    assert.equal(written['Acct-Input-Octets'], '17');
    assert.equal(written['Acct-Input-Gigawords'], '5');
    assert.equal(written['Acct-Output-Octets'], '123456');
    assert.equal(written['Acct-Terminate-Cause'], 'Idle-Timeout');
    assert.equal(written['Acct-Delay-Time'], '3');
  });

  test('FreeRADIUS refuses a request signed with another secret, and answers nothing', async () => {
    const record = { ...RECORD, sessionId: 'wrong-secret-session' };
    const request = encodeAccountingRequest(record, {
      identifier: 9,
      secret: Buffer.from('not the secret'),
      delaySeconds: 0,
    });
    const before = radius.output().length;
    const response = exchange(radius, request, 5_000);
    await until('FreeRADIUS to log the bad authenticator', async () =>
      /invalid Request Authenticator/i.test(radius.output().slice(before)),
    );
    assert.equal(await response, null, 'no Accounting-Response');
    assert.equal((await radius.records()).filter((entry) => entry['Acct-Session-Id'] === record.sessionId).length, 0);
  });

  test('an IPv6 NAS is named by NAS-IPv6-Address and a record without addresses leaves them out', () => {
    const request = encodeAccountingRequest(
      {
        ...RECORD,
        nasIpAddress: '2001:db8::1',
        framedIpAddress: null,
        framedIpv6Address: null,
        callingStationId: null,
      },
      { identifier: 1, secret: Buffer.from('s'), delaySeconds: 0 },
    );
    const types: number[] = [];
    for (let offset = 20; offset < request.packet.length; offset += request.packet.readUInt8(offset + 1))
      types.push(request.packet.readUInt8(offset));
    assert.ok(types.includes(95) && !types.includes(4), 'NAS-IPv6-Address, not NAS-IP-Address');
    assert.ok(!types.includes(8) && !types.includes(168) && !types.includes(31));
  });

  /** The value of the one `type` attribute in `packet`. */
  const attributeValue = (packet: Buffer, type: number): Buffer => {
    const found: Buffer[] = [];
    for (let offset = 20; offset < packet.length; offset += packet.readUInt8(offset + 1))
      if (packet.readUInt8(offset) === type)
        found.push(packet.subarray(offset + 2, offset + packet.readUInt8(offset + 1)));
    assert.equal(found.length, 1, `one attribute ${type}`);
    return found[0] as Buffer;
  };

  // 254 octets, one over; 64 four-octet characters (256 octets), cut inside the 64th.
  const cases = [
    { label: '254 ASCII characters', userId: 'a'.repeat(254), cut: 'a'.repeat(253) },
    { label: '64 emoji', userId: '😀'.repeat(64), cut: '😀'.repeat(63) },
  ];
  for (const { label, userId, cut } of cases)
    test(`a user id of ${label} is cut to whole characters within 253 octets, the same for each record`, async () => {
      const secret = Buffer.from(radius.secret);
      const sessionId = `long-user-${userId.length}`;
      // As the outbox keeps it: through the schema and JSON, as the Start and the Stop alike.
      const start = accountingRecordSchema.parse(
        JSON.parse(JSON.stringify({ ...RECORD, statusType: 'Start', sessionId, userName: userId })),
      );
      const stop = { ...RECORD, sessionId, userName: userId };
      const names = [start, stop].map((record) => {
        const request = encodeAccountingRequest(record, { identifier: 3, secret, delaySeconds: 0 });
        return new TextDecoder('utf-8', { fatal: true }).decode(attributeValue(request.packet, ATTRIBUTE.userName));
      });
      assert.deepEqual(names, [cut, cut]);
      assert.ok(Buffer.byteLength(cut) <= 253 && Buffer.byteLength(cut) > 249, 'as long as 253 octets allow');

      const request = encodeAccountingRequest(start, { identifier: 4, secret, delaySeconds: 0 });
      const response = await exchange(radius, request, 10_000);
      assert.ok(response !== null, 'FreeRADIUS answered');
      assert.deepEqual(checkAccountingResponse(response, request, secret), { kind: 'accepted' });
      const written = await detailRecord(radius, 'the Start', (entry) => entry['Acct-Session-Id'] === sessionId);
      assert.equal(written['User-Name'], cut);
    });
});
