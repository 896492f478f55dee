// The cap on each address's open connections names a capped address in the log at most once a
// minute, timed on the monotonic clock: a step of the wall clock (Date.now(), here a test double
// jumping hours) does not repeat the warning for every refused connection. An IPv6 client is
// capped by its /64, whichever of its addresses each connection comes from.
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { test, type TestContext } from 'node:test';
import { ConnectionsPerAddress } from '../../../src/http/plumbing/connections-per-address.js';
import { AddressAllowList } from '../../../src/net/address-allow-list.js';
import { capturedLog } from '../../support/captured-log.js';
import { within } from '../../support/until.js';

const WARNING = 'connection refused: the address has listen.maxConnectionsPerAddress connections open';

/** Connects to `port`; resolves once the server closed the connection. */
async function refusedConnection(t: TestContext, port: number): Promise<void> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  t.after(() => socket.destroy());
  await within(once(socket, 'close'), 'the server closes a connection beyond the cap');
}

test('a capped address is warned of once however far the wall clock is set forward meanwhile', async (t) => {
  const log = capturedLog();
  const server = createServer((_request, response) => response.end());
  new ConnectionsPerAddress({ maxPerAddress: 1, uncapped: new AddressAllowList([]), logger: log.logger }).install(
    server,
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  const accepted = once(server, 'connection');
  const held = connect(port, '127.0.0.1');
  t.after(() => held.destroy());
  await accepted;

  await refusedConnection(t, port);
  const wallNow = Date.now.bind(Date);
  t.mock.method(Date, 'now', () => wallNow() + 3 * 60 * 60 * 1000);
  await refusedConnection(t, port);

  assert.equal(
    log.lines().filter((line) => line.msg === WARNING).length,
    1,
    'one warning: the second refusal came within the minute',
  );
});

/** A connection as the server's 'connection' event hands it over: from `remoteAddress`, destroyed or not. */
class ArrivingConnection extends EventEmitter {
  destroyed = false;

  constructor(readonly remoteAddress: string) {
    super();
  }

  destroy(): void {
    this.destroyed = true;
    this.emit('close');
  }
}

test('one IPv6 host cannot pass the cap by taking another address of its /64 for each connection', () => {
  // Loopback has one IPv6 address, so the connections the server accepts are handed over as
  // the kernel would hand over those of one host with a /64 of its own.
  const server = createServer();
  new ConnectionsPerAddress({
    maxPerAddress: 4,
    uncapped: new AddressAllowList([]),
    logger: capturedLog().logger,
  }).install(server);
  const arrive = (address: string): ArrivingConnection => {
    const connection = new ArrivingConnection(address);
    server.emit('connection', connection);
    return connection;
  };

  const sameHost = Array.from({ length: 50 }, (_, index) => arrive(`2001:db8:7:1::${(index + 1).toString(16)}`));
  assert.equal(
    sameHost.filter((connection) => !connection.destroyed).length,
    4,
    'fifty addresses of one /64 hold the four connections of one client, not four each',
  );

  const neighbour = arrive('2001:db8:7:2::1');
  assert.equal(neighbour.destroyed, false, 'the next /64 is another client, with a cap of its own');
  const mapped = [arrive('192.0.2.9'), arrive('::ffff:192.0.2.9')];
  assert.deepEqual(
    mapped.map((connection) => connection.destroyed),
    [false, false],
    'an IPv4 client is its address, written IPv4-mapped or not',
  );

  sameHost[0]?.destroy();
  assert.equal(arrive('2001:db8:7:1::ffff').destroyed, false, 'a closed connection frees its place for the /64');
});
