// The vpn-daemon's two OpenVPN calls, /o/connection_list and /o/disconnect_client.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import {
  buildDaemonServer,
  OpenVpnUnreachableError,
  type OpenVpnConnections,
  type WireGuardPeers,
} from '../../../src/agent/daemon-api/server.js';
import { Secret } from '../../../src/shared/secret.js';

const CN_ALICE = 'Im7TCdhaKqLm/Cc9UTxGhVcZ4VDXAhPbt3praxEbbsg=';
const CN_BOB = 'lOo4ma+ta8c1AJv4q83VA1P84GjmW2Wq89cJMu4dm4A=';

describe("the vpn-daemon's OpenVPN calls", () => {
  const nodeKey = 'b'.repeat(64);
  const auth = { authorization: `Bearer ${nodeKey}` };
  const noPeers: WireGuardPeers = { list: async () => [], add: async () => undefined, remove: async () => null };
  const build = (openVpn?: OpenVpnConnections) =>
    buildDaemonServer({
      nodeKey: new Secret(nodeKey),
      peers: noPeers,
      clock: { now: () => new Date() },
      logger: pino({ level: 'silent' }),
      nodeInfo: async () => {
        throw new Error('not used');
      },
      ...(openVpn === undefined ? {} : { openVpn }),
    });

  test('connection_list lists every client; disconnect_client names one', async () => {
    const disconnected: string[] = [];
    const app = build({
      list: async () => [
        { commonName: CN_ALICE, ipFour: '10.77.0.2', ipSix: 'fd77::2' },
        { commonName: CN_BOB, ipFour: '10.78.0.2', ipSix: null },
      ],
      disconnect: async (commonName) => void disconnected.push(commonName),
    });
    const listed = await app.inject({ method: 'GET', url: '/o/connection_list', headers: auth });
    assert.equal(listed.statusCode, 200);
    assert.deepEqual(listed.json(), {
      connection_list: [
        { common_name: CN_ALICE, ip_four: '10.77.0.2', ip_six: 'fd77::2' },
        { common_name: CN_BOB, ip_four: '10.78.0.2', ip_six: null },
      ],
    });
    const answer = await app.inject({
      method: 'POST',
      url: '/o/disconnect_client',
      headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `common_name=${encodeURIComponent(CN_ALICE)}`,
    });
    assert.equal(answer.statusCode, 204);
    assert.deepEqual(disconnected, [CN_ALICE]);

    const unauthenticated = await app.inject({ method: 'GET', url: '/o/connection_list' });
    assert.equal(unauthenticated.statusCode, 401);
  });

  test('a disconnect_client a running server could not be told of is a 503, not a success', async () => {
    const app = build({
      list: async () => [],
      disconnect: async () => {
        throw new OpenVpnUnreachableError(['employees-0.conf'], 'end the connection');
      },
    });
    const answer = await app.inject({
      method: 'POST',
      url: '/o/disconnect_client',
      headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `common_name=${encodeURIComponent(CN_ALICE)}`,
    });
    assert.equal(answer.statusCode, 503);
    assert.match(answer.json<{ error: string }>().error, /OpenVPN server\(s\) employees-0\.conf to end the connection/);
  });
});
