// The syslog collector's transports against a real rsyslog (test/support/rsyslog.ts): UDP, TCP
// with octet counting, and TLS with the collector's CA and its name checked; and, over TCP, a
// collector that goes away: messages queue, leave once it is back, and what the queue cannot
// hold is dropped and counted. A stop sends what is queued for its flush time (waiting for a
// connection being opened), measured on the monotonic clock, whatever a step of the wall clock
// (a test double) says. And what rsyslog makes
// of user ids a receiver must tell apart (`%0A` and a line break): values it decodes back to the ids.
// A UDP collector whose port refuses datagrams is down, counted and logged.
// A message sent as a TCP collector ends the connection waits for the next connection, and what a
// broken connection still held in the process goes first on the next.
// A collector connected but reading nothing is a stall its dropped messages are logged once for;
// one that takes none of what the process holds within the stall time is down, its connection
// ended and its messages sent once it reads again (a real rsyslog stopped with SIGSTOP), in the
// order they were sent.
import assert from 'node:assert/strict';
import { channel } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { test } from 'node:test';
import { pino } from 'pino';
import type { SyslogCollectorConfig } from '../../../src/config/portal-config.js';
import { SyslogCollector, type SyslogCollectorTiming } from '../../../src/core/syslog/index.js';
import { NAT_CHANGE_TEXT_PATTERN, SESSION_TEXT_PATTERN, type SessionRecord } from '../../../src/protocol/syslog.js';
import { startRsyslog } from '../../support/rsyslog.js';
import { until } from '../../support/until.js';

const record = (userId: string): SessionRecord => ({
  event: 'start',
  userId,
  deviceId: null,
  profileId: 'staff',
  nodeNumber: 0,
  vpnProto: 'openvpn',
  connectionId: 'cn-1',
  ipFour: '10.60.0.2',
  ipSix: 'fd60::2',
  clientAddress: '198.51.100.7',
  nat: null,
});

const common = {
  host: '127.0.0.1',
  facility: 'local4',
  appName: 'vpn-portal',
  hostname: 'portal.test',
  structuredData: true,
  clientAddress: true,
  queueSize: 100,
} as const;

function collector(
  config: SyslogCollectorConfig,
  logged: string[] = [],
  timing: SyslogCollectorTiming = {},
): SyslogCollector {
  const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(line) });
  return new SyslogCollector(config, 32473, logger, timing);
}

test('over UDP each message is one datagram that rsyslog parses as RFC 5424 with its structured data', async (t) => {
  const rsyslog = await startRsyslog();
  const udp = collector({ ...common, transport: 'udp', port: rsyslog.udpPort });
  t.after(async () => {
    await udp.close(0);
    await rsyslog.close();
  });
  udp.sendSession(record('alice'), new Date('2026-11-29T04:18:20.123Z'));
  udp.sendSession(record('bob'), new Date('2026-11-29T04:18:21Z'));
  const [first, second] = await rsyslog.waitFor(2);
  assert.equal(first?.transport, 'udp');
  assert.equal(first?.version, '1', 'read as RFC 5424');
  assert.equal(first?.pri, String(20 * 8 + 6));
  assert.equal(first?.msgId, 'SESSION_START');
  assert.equal(first?.hostname, 'portal.test');
  assert.equal(first?.sd['vpnSession@32473']?.['user_id'], 'alice');
  assert.equal(SESSION_TEXT_PATTERN.exec(second?.msg ?? '')?.[2], 'bob');
  assert.equal(udp.state.sent, 2);
});

test('over UDP a collector whose port refuses a datagram is counted and logged as down, and is sent to again once it is back', async (t) => {
  const rsyslog = await startRsyslog();
  const logged: string[] = [];
  const udp = collector({ ...common, transport: 'udp', port: rsyslog.udpPort }, logged);
  t.after(async () => {
    await udp.close(0);
    await rsyslog.close();
  });
  udp.sendSession(record('before'), new Date());
  await rsyslog.waitFor(1);

  await rsyslog.stop();
  // One message a while, as sessions come: the refusal (ICMP port unreachable) arrives between sends.
  udp.sendSession(record('refused'), new Date());
  await until('the refusal is noticed', async () => !udp.state.up);
  assert.equal(udp.state.dropped.sendFailed, 1);
  assert.ok(logged.some((line) => line.includes('ECONNREFUSED')));

  await rsyslog.start();
  udp.sendSession(record('after'), new Date());
  const messages = await rsyslog.waitFor(2);
  assert.deepEqual(
    messages.map((message) => message.sd['vpnSession@32473']?.['user_id']),
    ['before', 'after'],
  );
  assert.equal(udp.state.up, true);
});

test('rsyslog receives a user id holding %0A and one holding a line break as two values, each decoding back to its id', async (t) => {
  const rsyslog = await startRsyslog();
  const udp = collector({ ...common, transport: 'udp', port: rsyslog.udpPort });
  t.after(async () => {
    await udp.close(0);
    await rsyslog.close();
  });
  const ids = ['a%0Ab', 'a\nb', 'x"]\\%25\u2028y'];
  for (const [index, id] of ids.entries()) udp.sendSession(record(id), new Date(Date.UTC(2026, 10, 29, 4, 18, index)));
  const received = await rsyslog.waitFor(ids.length);
  const values = received.map((message) => message.sd['vpnSession@32473']?.['user_id'] ?? '');
  assert.deepEqual(values, ['a%250Ab', 'a%0Ab', 'x"]\\%2525%E2%80%A8y'], 'as mmpstrucdata parsed them');
  assert.deepEqual(values.map(decodeURIComponent), ids);
});

test('over TCP a collector away queues messages, sends them once it is back, and counts what the queue could not hold', async (t) => {
  const rsyslog = await startRsyslog();
  const logged: string[] = [];
  const tcp = collector(
    { ...common, transport: 'tcp', framing: 'octet-counting', port: rsyslog.tcpPort, queueSize: 3 },
    logged,
  );
  t.after(async () => {
    await tcp.close(0);
    await rsyslog.close();
  });
  tcp.sendSession(record('before'), new Date());
  await rsyslog.waitFor(1);
  assert.equal(tcp.state.up, true);

  await rsyslog.stop();
  await until('the collector notices rsyslog is gone', async () => !tcp.state.up);
  for (const user of ['q1', 'q2', 'q3', 'lost1', 'lost2']) tcp.sendSession(record(user), new Date());
  assert.equal(tcp.state.queued, 3);
  assert.deepEqual(tcp.state.dropped, { queueFull: 2, sendFailed: 0 });
  assert.ok(logged.some((line) => line.includes('syslog queue full (3 messages)')));

  await rsyslog.start();
  const messages = await rsyslog.waitFor(4, 60_000);
  assert.deepEqual(
    messages.map((message) => message.sd['vpnSession@32473']?.['user_id']),
    ['before', 'q1', 'q2', 'q3'],
    'the queued messages, in order, and not the dropped ones',
  );
  assert.equal(messages[1]?.transport, 'tcp');
  await until('the queue is empty', async () => tcp.state.queued === 0 && tcp.state.up);
  assert.equal(tcp.state.sent, 4);
  assert.ok(logged.some((line) => line.includes('syslog collector reachable again; sending 3 queued')));
});

test("over TLS the collector's certificate must chain to caFile and carry serverName, otherwise nothing is sent; newline framing and the text alone read as well", async (t) => {
  const rsyslog = await startRsyslog({ tls: true });
  const { readFileSync } = await import('node:fs');
  const caPem = readFileSync(rsyslog.caFile ?? '', 'utf8');
  const port = rsyslog.tlsPort ?? 0;
  const logged: string[] = [];
  const wrongName = collector(
    { ...common, transport: 'tls', framing: 'octet-counting', port, caPem, serverName: '127.0.0.1' },
    logged,
  );
  // As a firewall is sent to: one message a line, as Palo Alto's listener reads them (rsyslog
  // takes both framings), and the text alone.
  const right = collector({
    ...common,
    transport: 'tls',
    framing: 'newline',
    structuredData: false,
    port,
    caPem,
    serverName: rsyslog.serverName,
  });
  t.after(async () => {
    await wrongName.close(0);
    await right.close(0);
    await rsyslog.close();
  });
  wrongName.sendSession(record('mallory'), new Date());
  await until('the wrong name is refused', async () => logged.some((line) => line.includes('unreachable')));
  assert.match(logged.join('\n'), /not in the cert's list|does not match certificate/);
  assert.equal(wrongName.state.up, false);
  assert.equal(wrongName.state.queued, 1, 'kept, not sent to a collector it cannot trust');

  right.sendSession(record('alice'), new Date());
  const [message] = await rsyslog.waitFor(1);
  assert.equal(message?.transport, 'tls');
  assert.equal(message?.version, '1');
  assert.deepEqual(message?.sd, {}, 'no structured data');
  assert.equal(SESSION_TEXT_PATTERN.exec(message?.msg ?? '')?.[2], 'alice');
  assert.equal(rsyslog.received().length, 1, 'nothing from the collector with the wrong name');
});

test('over TCP the messages a broken connection still held in the process go first on the next connection', async (t) => {
  // A collector that reads nothing on its first connection until told, and everything on the next.
  const connections: { socket: Socket; text: string; ended: boolean }[] = [];
  const server = createServer({ pauseOnConnect: true }, (socket) => {
    const connection = { socket, text: '', ended: false };
    connections.push(connection);
    socket.on('data', (chunk: Buffer) => {
      connection.text += chunk.toString();
    });
    socket.on('end', () => {
      connection.ended = true;
    });
    if (connections.length > 1) socket.resume();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    for (const { socket } of connections) socket.destroy();
    server.close();
  });
  let clientSocket: Socket | null = null;
  const clientSockets = channel('net.client.socket');
  const onSocket = (message: unknown): void => {
    clientSockets.unsubscribe(onSocket);
    clientSocket = (message as { socket: Socket }).socket;
  };
  clientSockets.subscribe(onSocket);
  t.after(() => clientSockets.unsubscribe(onSocket));
  const tcp = collector({
    ...common,
    transport: 'tcp',
    framing: 'newline',
    port: (server.address() as AddressInfo).port,
    queueSize: 1_000,
  });
  t.after(() => tcp.close(0));
  const padding = 'x'.repeat(16 * 1024);
  let count = 0;
  tcp.send(`m${count++} ${padding}`);
  await until('the connection is up', async () => tcp.state.up);
  // The system's buffers fill, then the process's, then the queue.
  while (tcp.state.queued === 0) tcp.send(`m${count++} ${padding}`);
  for (let index = 0; index < 5; index++) tcp.send(`m${count++} ${padding}`);

  // The connection breaks on the portal's side (as a keepalive that timed out): what the system
  // took still leaves; what the process held does not.
  await new Promise((resolve) => setImmediate(resolve));
  (clientSocket as Socket | null)?.destroy(new Error('broken'));
  connections[0]?.socket.resume();
  await until('the next connection took the queue', async () => tcp.state.queued === 0 && connections.length > 1);
  const lines = (text: string) => text.split('\n').slice(0, -1);
  await until('the collector read the first connection to its end', async () => connections[0]?.ended === true);
  await until(
    'the collector read every message of the next',
    async () => connections.slice(0, 2).reduce((sum, { text }) => sum + lines(text).length, 0) >= count,
  );
  // A message the system took in part is cut short on the first connection (a collector drops
  // it), and whole on the next.
  const first = lines(connections[0]?.text ?? '');
  const second = lines(connections[1]?.text ?? '');
  assert.deepEqual(
    [...first, ...second].map((line) => line.split(' ')[0]),
    Array.from({ length: count }, (_, index) => `m${index}`),
    'every message once, in order',
  );
});

test('a stop right after the first message waits for the connection it opens and sends the message', async (t) => {
  const rsyslog = await startRsyslog();
  t.after(() => rsyslog.close());
  const tcp = collector({ ...common, transport: 'tcp', framing: 'octet-counting', port: rsyslog.tcpPort });
  tcp.sendSession(record('last'), new Date());
  await tcp.close(2_000);
  const [message] = await rsyslog.waitFor(1, 5_000);
  assert.equal(message?.sd['vpnSession@32473']?.['user_id'], 'last');
});

test('a stop sends what is queued for its whole flush time, though the wall clock is set hours forward meanwhile', async (t) => {
  // A collector that reads nothing until told: the connection's buffers fill and messages queue.
  const server = createServer({ pauseOnConnect: true });
  let receivedBytes = 0;
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.close();
  });
  const tcp = collector({
    ...common,
    transport: 'tcp',
    framing: 'newline',
    port: (server.address() as AddressInfo).port,
    queueSize: 1_000,
  });
  const message = 'x'.repeat(64 * 1024);
  for (let index = 0; index < 500; index++) tcp.send(message);
  const connection = await accepted;
  t.after(() => connection.destroy());
  connection.on('data', (chunk: Buffer) => {
    receivedBytes += chunk.length;
  });
  await until('the connection is up and messages wait behind its full buffers', async () => tcp.state.up);
  assert.ok(tcp.state.queued > 0, 'messages are queued');

  const closing = tcp.close(10_000);
  const wallNow = Date.now.bind(Date);
  t.mock.method(Date, 'now', () => wallNow() + 3 * 60 * 60 * 1000);
  await new Promise((resolve) => setTimeout(resolve, 300));
  connection.resume();
  await closing;
  assert.equal(tcp.state.queued, 0, 'nothing was left in the queue');
  await until('the collector received every message', async () => receivedBytes >= 500 * (message.length + 1));
});

test('a collector connected but reading nothing fills the queue, and its drops are logged once a stall, not once a message', async (t) => {
  // A collector that takes the connection and reads nothing (as one stopped with SIGSTOP).
  const server = createServer({ pauseOnConnect: true });
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.close();
  });
  const logged: string[] = [];
  const tcp = collector(
    { ...common, transport: 'tcp', framing: 'newline', port: (server.address() as AddressInfo).port, queueSize: 3 },
    logged,
  );
  t.after(() => tcp.close(0));
  const message = 'x'.repeat(64 * 1024);
  tcp.send(message);
  const connection = await accepted;
  t.after(() => connection.destroy());
  await until('the connection is up', async () => tcp.state.up);
  const fullLines = () => logged.filter((line) => line.includes('syslog queue full')).length;
  const stall = (): void => {
    // The system's buffers fill first, then the queue, then messages are dropped.
    while (tcp.state.queued === 0) tcp.send(message);
    for (let index = 0; index < 30; index++) tcp.send(message);
  };
  stall();
  assert.equal(tcp.state.queued, 3);
  assert.ok(tcp.state.dropped.queueFull >= 27);
  assert.equal(fullLines(), 1, 'one line for the stall');

  // It reads again: the queue leaves, and the next stall is logged again.
  connection.resume();
  await until('the queue is sent', async () => tcp.state.queued === 0);
  const dropped = tcp.state.dropped.queueFull;
  stall();
  assert.ok(tcp.state.dropped.queueFull >= dropped + 27);
  assert.equal(fullLines(), 2, 'one line for each stall');
});

test('over TCP a message sent as the collector ends the connection is not written to it but waits for the next one', async (t) => {
  // A collector that hangs up after the first message of its first connection (as one restarting).
  const connections: string[] = [];
  const server = createServer((socket) => {
    const index = connections.push('') - 1;
    socket.on('data', (chunk: Buffer) => {
      connections[index] += chunk.toString();
      if (index === 0) socket.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.close();
  });
  const tcp = collector({
    ...common,
    transport: 'tcp',
    framing: 'newline',
    port: (server.address() as AddressInfo).port,
  });
  t.after(() => tcp.close(0));
  // The next message comes the moment the portal hears the collector end the connection, before it closed.
  const clientSockets = channel('net.client.socket');
  const onSocket = (message: unknown): void => {
    clientSockets.unsubscribe(onSocket);
    // After the collector's own listeners, which it adds once the socket is made.
    queueMicrotask(() => (message as { socket: Socket }).socket.once('end', () => tcp.send('m1')));
  };
  clientSockets.subscribe(onSocket);
  t.after(() => clientSockets.unsubscribe(onSocket));
  tcp.send('m0');
  await until('the next connection took the message', async () => (connections[1] ?? '') !== '');
  assert.deepEqual(connections, ['m0\n', 'm1\n']);
});

test('over TCP a collector that takes nothing for the stall time is down within it, and gets every message once it reads again, in order', async (t) => {
  const rsyslog = await startRsyslog();
  const logged: string[] = [];
  const stallMs = 2_000;
  const tcp = collector(
    { ...common, transport: 'tcp', framing: 'octet-counting', port: rsyslog.tcpPort, queueSize: 100_000 },
    logged,
    { stallMs },
  );
  t.after(async () => {
    rsyslog.resume();
    await tcp.close(0);
    await rsyslog.close();
  });
  const padding = 'x'.repeat(1_000);
  let count = 0;
  tcp.sendSession(record(`s${count++}-${padding}`), new Date());
  await rsyslog.waitFor(1);
  assert.equal(tcp.state.up, true);

  // Stopped, as a collector whose host is gone or that reads nothing: its system takes bytes
  // until the buffers are full, then the process holds them, then the queue.
  rsyslog.pause();
  while (tcp.state.queued === 0 && count < 50_000) tcp.sendSession(record(`s${count++}-${padding}`), new Date());
  for (let index = 0; index < 10; index++) tcp.sendSession(record(`s${count++}-${padding}`), new Date());
  const holding = performance.now();
  assert.ok(tcp.state.queued > 0, 'messages queue behind the full buffers');
  await until('the stalled collector is down', async () => !tcp.state.up, 4 * stallMs);
  assert.ok(performance.now() - holding <= stallMs * 1.25 + 1_000, 'down within the stall time');
  const stallLines = () => logged.filter((line) => line.includes(`took nothing for ${stallMs / 1000} s`)).length;
  assert.equal(stallLines(), 1);
  // Sessions go on: its system still accepts the next connection, which fills as the last did
  // (with more than the last took: the system's buffers of a connection grow).
  const filled = count;
  for (let index = 0; index < 3 * filled; index++) tcp.sendSession(record(`s${count++}-${padding}`), new Date());
  const limit = performance.now() + 3 * stallMs;
  while (performance.now() < limit) {
    assert.equal(tcp.state.up, false, 'down while the collector reads nothing, whatever its system accepts');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.equal(stallLines(), 1, 'logged once a stall');

  rsyslog.resume();
  await until(
    'every message arrived',
    async () => {
      const users = new Set(rsyslog.received().map((message) => message.sd['vpnSession@32473']?.['user_id']));
      return Array.from({ length: count }, (_, index) => `s${index}-${padding}`).every((user) => users.has(user));
    },
    60_000,
  );
  await until('the collector is up with an empty queue', async () => tcp.state.up && tcp.state.queued === 0, 20_000);
  assert.ok(logged.some((line) => line.includes('syslog collector reachable again; it took the queue')));
  // Its host took connections all along: the stalled one closed once it had handed over what
  // its system held, before the next opened, so rsyslog read them one after the other.
  const order = rsyslog
    .received()
    .map((message) => Number(/^s(\d+)-/.exec(message.sd['vpnSession@32473']?.['user_id'] ?? '')?.[1]));
  const firstOutOfOrder = order.findIndex((sent, index) => index > 0 && sent < (order[index - 1] ?? 0));
  assert.equal(
    firstOutOfOrder,
    -1,
    `in the order sent: ${order.slice(firstOutOfOrder - 3, firstOutOfOrder + 3).join(', ')}`,
  );
});

test('rsyslog receives whole, over TCP and UDP, the parts of a NAT change of 1,024 scattered public addresses and a session message of the longest values', async (t) => {
  const rsyslog = await startRsyslog();
  const tcp = collector({ ...common, transport: 'tcp', framing: 'octet-counting', port: rsyslog.tcpPort });
  const udp = collector({ ...common, transport: 'udp', port: rsyslog.udpPort });
  t.after(async () => {
    await tcp.close(0);
    await udp.close(0);
    await rsyslog.close();
  });
  // Every other address of 198.18.0.0/23: no two consecutive, 15 KB of them.
  const pool = Array.from({ length: 1024 }, (_, index) => `198.18.${index >> 7}.${(index & 127) * 2}`);
  const nat = { nodeNumber: 3, mode: 'deterministic', publicAddresses: pool, portsPerClient: 64 } as const;
  const long = { ...record('\u0085'.repeat(255)), profileId: 'p'.repeat(10_000) };
  const appliedAt = new Date('2026-11-29T04:00:00.000Z');
  for (const sender of [tcp, udp]) {
    sender.sendNatChange({ ...nat, appliedAt }, new Date());
    sender.sendSession(long, new Date());
  }
  const parts = Math.ceil((pool.join(',').length + 1) / 1536);
  const received = await rsyslog.waitFor(2 * (parts + 1));
  for (const transport of ['tcp', 'udp']) {
    const messages = received.filter((message) => message.transport === transport);
    const changes = messages.filter((message) => message.msgId === 'NAT_CHANGE');
    assert.ok(changes.length > 1, `${transport}: ${changes.length} parts`);
    const listed = changes.flatMap((message, index) => {
      const groups = NAT_CHANGE_TEXT_PATTERN.exec(message.msg);
      assert.deepEqual(groups?.slice(6), [String(index + 1), String(changes.length)], `${transport}: the text's end`);
      const sd = message.sd['vpnNat@32473'];
      assert.equal(sd?.['public_addresses'], groups?.[3]);
      assert.equal(sd?.['parts'], String(changes.length));
      return groups?.[3]?.split(',') ?? [];
    });
    assert.deepEqual(listed, pool, `${transport}: every address, in order`);
    const session = messages.find((message) => message.msgId === 'SESSION_START');
    assert.equal(session?.sd['vpnSession@32473']?.['user_id'], '%C2%85'.repeat(255), `${transport}: the user id whole`);
    assert.equal(
      SESSION_TEXT_PATTERN.exec(session?.msg ?? '')?.[4],
      'p'.repeat(255),
      `${transport}: the text to its end`,
    );
  }
});

test('a stalled connection is cut at once when its host takes no more connections, and after ten stall times when it takes them but the collector never reads', async (t) => {
  const stallMs = 400;
  /** How long after the collector went down its stalled connection closed. */
  const closedAfterStall = async (hostGone: boolean): Promise<number> => {
    // A collector that takes the connection and reads nothing.
    const server = createServer({ pauseOnConnect: true });
    const accepted: Socket[] = [];
    server.on('connection', (socket) => accepted.push(socket));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    t.after(() => {
      server.close();
      for (const socket of accepted) socket.destroy();
    });
    // The collector's own socket: the first it opens (a probe comes later).
    const clientSockets = channel('net.client.socket');
    const first = new Promise<Socket>((resolve) => {
      const onSocket = (message: unknown): void => {
        clientSockets.unsubscribe(onSocket);
        resolve((message as { socket: Socket }).socket);
      };
      clientSockets.subscribe(onSocket);
    });
    const tcp = collector(
      { ...common, transport: 'tcp', framing: 'newline', port: (server.address() as AddressInfo).port, queueSize: 3 },
      [],
      { stallMs },
    );
    t.after(() => tcp.close(0));
    const message = 'x'.repeat(64 * 1024);
    tcp.send(message);
    const link = await first;
    const closed = new Promise<number>((resolve) => link.once('close', () => resolve(performance.now())));
    await until('the connection is up', async () => tcp.state.up);
    while (tcp.state.queued === 0) tcp.send(message);
    // Gone: its host refuses connections from now on (the one it took stays half-open).
    if (hostGone) server.close();
    await until('the stalled collector is down', async () => !tcp.state.up, 4 * stallMs);
    const downAt = performance.now();
    return (await closed) - downAt;
  };
  const gone = await closedAfterStall(true);
  assert.ok(gone < 3 * stallMs, `cut at once: ${Math.round(gone)} ms`);
  const reading = await closedAfterStall(false);
  assert.ok(
    reading >= 9 * stallMs && reading < 14 * stallMs,
    `given ten stall times to hand over what it holds: ${Math.round(reading)} ms`,
  );
});
