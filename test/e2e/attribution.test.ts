// An abuse report answered from real traffic: two WireGuard clients of two users behind a node
// with deterministic NAT fetch a page from a namespace standing for the Internet, whose server
// logs the public address, source port and time of each request. The portal learns the mapping
// from the agent's own `/i/node` report and the sessions from the node's handshakes; each logged
// triple then names its user through GET /attribution, a port of no block answers 404 with the
// reason, and once the first user is destroyed and their tunnel address goes to a third user, the
// old moment still names the first user and the new one the third. Each look-up is audited with
// its reason.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AdminApiError } from '../../src/admin-client/admin-api-client.js';
import type { AttributionAnswer } from '../../src/protocol/admin-api.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { lastNatMapping } from '../../src/storage/nat-mappings.js';
import { auditLog } from '../support/admin-keys.js';
import {
  connectSourceRoutedClient,
  disconnectSourceRoutedClient,
  type SourceRoutedClient,
} from '../support/source-routed-clients.js';
import { startTunnelLab, type TunnelLab } from '../support/tunnel-lab.js';
import { until } from '../support/until.js';

const PUBLIC_ADDRESSES = ['192.0.2.60', '192.0.2.61'];
const PORTS_PER_CLIENT = 500;
const SERVER_PORT = 8080;

// An HTTP server that logs "ISO-TIME ADDRESS PORT" for each request it answers.
const SERVER = `
const http = require('node:http');
const [host, port] = process.argv.slice(1);
http.createServer((request, response) => {
  console.log(new Date().toISOString(), request.socket.remoteAddress, request.socket.remotePort);
  response.end('a page');
}).listen(Number(port), host, () => console.log('listening'));
`;

// Fetches the page once from one source address.
const FETCH = `
const http = require('node:http');
const [local, host, port] = process.argv.slice(1);
http.get({ host, port: Number(port), localAddress: local, agent: false, timeout: 15000 }, (response) => {
  response.resume().on('end', () => process.exit(response.statusCode === 200 ? 0 : 1));
}).on('timeout', () => process.exit(1)).on('error', () => process.exit(1));
`;

interface LoggedRequest {
  readonly at: string;
  readonly ip: string;
  readonly port: string;
}

type Client = SourceRoutedClient;

/** The web server in the Internet namespace, which routes the public addresses to the node; the requests it logged so far. */
async function startWebServer(lab: TunnelLab): Promise<() => LoggedRequest[]> {
  await lab.internet.exec('ip', ['route', 'add', '192.0.2.0/24', 'via', lab.internetAddresses.nodeFour]);
  const server = lab.internet.spawn(process.execPath, ['-e', SERVER, lab.internetAddresses.four, String(SERVER_PORT)]);
  const lines: string[] = [];
  let partial = '';
  server.stdout?.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
  });
  await until('the web server listens', async () => lines.includes('listening'));
  return () =>
    lines
      .filter((line) => line !== 'listening')
      .map((line) => {
        const [at = '', ip = '', port = ''] = line.split(' ');
        return { at, ip, port };
      });
}

/**
 * The client says hello through its tunnel (a handshake), the portal's pass opens its session,
 * then it fetches the page: the request the web server logged.
 */
async function fetchPage(lab: TunnelLab, client: Client, serverLog: () => LoggedRequest[]): Promise<LoggedRequest> {
  const target = lab.internetAddresses.four;
  const ping = await lab.client.run('ping', ['-c', '1', '-W', '2', '-w', '20', '-I', client.address, target]);
  assert.equal(ping.exitCode, 0, `${client.address} reaches the internet: ${ping.stdout}${ping.stderr}`);
  await lab.portal.reconcile();
  const open = await lab.portal.admin.connectionLog({ user_id: client.userId, open: 'yes' });
  assert.deepEqual(
    open.connection_log.map((entry) => [entry.connection_id, entry.ip_four]),
    [[client.publicKey, client.address]],
    `${client.userId}'s session is open`,
  );
  const seen = serverLog().length;
  await lab.client.exec(process.execPath, ['-e', FETCH, client.address, target, String(SERVER_PORT)]);
  await until(`the web server logged ${client.userId}'s request`, async () => serverLog().length > seen);
  const [request, ...more] = serverLog().slice(seen);
  assert.ok(request !== undefined && more.length === 0, JSON.stringify(serverLog()));
  assert.ok(PUBLIC_ADDRESSES.includes(request.ip), `the request left on a public address: ${request.ip}`);
  return request;
}

/** Waits until the clock has left the second `moment` lies in. */
async function nextSecond(moment: number): Promise<void> {
  await until('a new second begins', async () => Math.floor(Date.now() / 1000) > Math.floor(moment / 1000));
}

/** GET /attribution with the logged triple and a reason: the one session it names. */
async function attribute(lab: TunnelLab, request: LoggedRequest, reason: string): Promise<AttributionAnswer> {
  const answer = await lab.portal.admin.attribution({ ip: request.ip, port: request.port, at: request.at, reason });
  assert.equal(answer.sessions.length, 1, JSON.stringify(answer));
  return answer;
}

test('the address, port and time a web server logged name the user behind the deterministic NAT, before and after the tunnel address changed hands', async (t) => {
  const lab = await startTunnelLab({
    internet: true,
    profile: { defaultGateway: true },
    agentConfig: () => ({ nat: { publicAddresses: PUBLIC_ADDRESSES, portsPerClient: PORTS_PER_CLIENT } }),
  });
  t.after(lab.close);

  // The portal learns the mapping from the agent's /i/node at a pass, not from the test.
  await lab.portal.reconcile();
  const db = lab.portal.portal.ctx.db;
  const recorded = await lastNatMapping(db, asNodeNumber(0));
  assert.equal(recorded?.mapping.mode, 'deterministic', JSON.stringify(recorded));
  assert.ok(recorded?.mapping.mode === 'deterministic');
  assert.deepEqual(recorded.mapping.settings.publicAddresses, PUBLIC_ADDRESSES);

  const serverLog = await startWebServer(lab);
  const alice = await connectSourceRoutedClient(lab, 'alice', 101);
  const bob = await connectSourceRoutedClient(lab, 'bob', 102);
  const aliceRequest = await fetchPage(lab, alice, serverLog);
  const bobRequest = await fetchPage(lab, bob, serverLog);
  assert.notDeepEqual([aliceRequest.ip, aliceRequest.port], [bobRequest.ip, bobRequest.port]);

  for (const [client, request] of [
    [alice, aliceRequest],
    [bob, bobRequest],
  ] as const) {
    const answer = await attribute(lab, request, `abuse report about ${request.ip}:${request.port}`);
    assert.deepEqual(
      [answer.translation?.node_number, answer.translation?.public_address, answer.translation?.client_ip],
      [0, request.ip, client.address],
      `the mapping names ${client.userId}'s client`,
    );
    assert.equal(answer.translation?.mapping_applied_at, recorded.appliedAt);
    const [session] = answer.sessions;
    assert.deepEqual(
      [session?.user_id, session?.connection_id, session?.node_number, session?.ip_four],
      [client.userId, client.publicKey, 0, client.address],
    );
  }
  const [audited] = await auditLog(lab.portal, 1);
  assert.deepEqual(
    [audited?.call, audited?.status, audited?.userId, audited?.parameters['reason']],
    ['attribution', 200, 'bob', `abuse report about ${bobRequest.ip}:${bobRequest.port}`],
    'the look-up is audited with its reason and whom it found',
  );

  // Port 80 lies below every block (they start at 1024).
  const outside = await lab.portal.admin
    .attribution({ ip: aliceRequest.ip, port: '80', at: aliceRequest.at, reason: 'a report of port 80' })
    .then(
      () => assert.fail('a port of no block answered'),
      (error: unknown) => error,
    );
  assert.ok(outside instanceof AdminApiError, String(outside));
  assert.equal(outside.status, 404);
  assert.match(
    outside.message,
    new RegExp(`port 80 of ${aliceRequest.ip.replaceAll('.', '\\.')} is outside every client's block`),
  );
  const [refusedRow] = await auditLog(lab.portal, 1);
  assert.deepEqual(
    [refusedRow?.status, refusedRow?.userId, refusedRow?.parameters['reason']],
    [404, null, 'a report of port 80'],
  );

  // Alice is destroyed; her address goes back to the pool and carol gets it. The connection log
  // counts whole seconds: alice's session ends in a later second than her request's, and carol's
  // starts in a later second than the one alice's ended in, so the moments do not overlap.
  await nextSecond(Date.parse(aliceRequest.at));
  await disconnectSourceRoutedClient(lab, alice);
  assert.equal((await lab.portal.post('/destroy', { user_id: 'alice' })).status, 204);
  await nextSecond(Date.now());
  const carol = await connectSourceRoutedClient(lab, 'carol', 103);
  assert.equal(carol.address, alice.address, "carol got alice's tunnel address");
  const carolRequest = await fetchPage(lab, carol, serverLog);

  const before = await attribute(lab, aliceRequest, 'the old report again');
  assert.deepEqual(
    [before.sessions[0]?.user_id, before.sessions[0]?.connection_id, before.translation?.client_ip],
    ['alice', alice.publicKey, alice.address],
    'the old moment still names the destroyed user',
  );
  const after = await attribute(lab, carolRequest, 'a new report');
  assert.deepEqual(
    [after.sessions[0]?.user_id, after.sessions[0]?.connection_id, after.translation?.client_ip],
    ['carol', carol.publicKey, alice.address],
    'the new moment names the next holder of the address',
  );
  if (carolRequest.ip === aliceRequest.ip)
    assert.equal(
      (await attribute(lab, { ...carolRequest, at: aliceRequest.at }, 'the new port at the old time')).sessions[0]
        ?.user_id,
      'alice',
      "the same block at alice's time is alice's",
    );
});
