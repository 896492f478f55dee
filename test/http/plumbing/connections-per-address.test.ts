// The cap on each address's open connections names a capped address in the log at most once a
// minute, timed on the monotonic clock: a step of the wall clock (Date.now(), here a test double
// jumping hours) does not repeat the warning for every refused connection.
import assert from 'node:assert/strict';
import { once } from 'node:events';
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
