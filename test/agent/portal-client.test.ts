// The agent asking a real portal about OpenVPN clients: verdicts, disconnect reports, fail-closed.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { PortalClient, type ConnectRequest, type DisconnectReport } from '../../src/agent/portal-client.js';
import { Secret } from '../../src/shared/secret.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { createLogger } from '../../src/portal.js';
import { startTestPortal } from '../support/test-portal.js';

const CN_ALICE = 'Im7TCdhaKqLm/Cc9UTxGhVcZ4VDXAhPbt3praxEbbsg=';

describe('asking the portal about OpenVPN clients', () => {
  const request: ConnectRequest = {
    profileId: 'employees',
    commonName: CN_ALICE,
    originatingIp: '192.0.2.7',
    ipFour: '10.77.0.2',
    ipSix: 'fd77::2',
    reauth: false,
  };
  const clientAnswering = (
    answer: () => Response | Promise<Response>,
    sent: { url?: string; body?: string; headers?: Headers } = {},
  ) =>
    new PortalClient({
      apiUrl: new URL('http://portal.example/vpn-user-portal/node-api.php'),
      nodeNumber: asNodeNumber(3),
      nodeKey: new Secret('k'.repeat(64)),
      profileIdList: [],
      openVpn: { user: 'nobody', group: 'nogroup', preferAes: true, managementDir: '/run/x' },
      fetch: async (input, init) => {
        sent.url = String(input);
        sent.body = String(init?.body);
        sent.headers = new Headers(init?.headers);
        return answer();
      },
    });

  test('only HTTP 200 with the body OK allows', async () => {
    const sent: { url?: string; body?: string; headers?: Headers } = {};
    assert.deepEqual(await clientAnswering(() => new Response('OK'), sent).authorizeConnect(request), {
      allowed: true,
    });
    assert.equal(sent.url, 'http://portal.example/vpn-user-portal/node-api.php/connect');
    assert.deepEqual(Object.fromEntries(new URLSearchParams(sent.body)), {
      profile_id: 'employees',
      common_name: CN_ALICE,
      originating_ip: '192.0.2.7',
      ip_four: '10.77.0.2',
      ip_six: 'fd77::2',
    });
    assert.equal(sent.headers?.get('x-node-number'), '3');
    assert.equal(sent.headers?.get('authorization'), `Bearer ${'k'.repeat(64)}`);

    // Without an IPv6 pool or a known client address, those fields are left out rather than empty.
    await clientAnswering(() => new Response('OK'), sent).authorizeConnect({
      ...request,
      originatingIp: '',
      ipSix: '',
    });
    assert.deepEqual([...new URLSearchParams(sent.body).keys()], ['profile_id', 'common_name', 'ip_four']);
  });

  test('ERR, another body, another status and no answer all deny', async () => {
    // [what, the portal's answer, whether the portal itself said no]
    const refusals: [string, () => Response | Promise<Response>, boolean][] = [
      ['ERR', () => new Response('ERR'), true],
      ['OK with a newline', () => new Response('OK\n'), false],
      ['500 OK', () => new Response('OK', { status: 500 }), false],
      ['401', () => new Response('{"error":"authentication required"}', { status: 401 }), false],
      ['no portal', () => Promise.reject(new TypeError('fetch failed')), false],
    ];
    for (const [what, answer, portalAnswered] of refusals) {
      const verdict = await clientAnswering(answer).authorizeConnect(request);
      assert.equal(verdict.allowed, false, what);
      assert.equal(verdict.allowed ? null : verdict.portalAnswered, portalAnswered, what);
    }
  });

  test('a disconnect is reported with its byte counts and the connection’s age, and fails unless the portal says OK', async () => {
    const report: DisconnectReport = {
      profileId: 'employees',
      commonName: CN_ALICE,
      ipFour: '10.77.0.2',
      ipSix: 'fd77::2',
      bytesIn: 2187,
      bytesOut: 2230,
      ageMs: 61_200,
    };
    const sent: { url?: string; body?: string } = {};
    await clientAnswering(() => new Response('OK'), sent).reportDisconnect(report);
    assert.equal(sent.url, 'http://portal.example/vpn-user-portal/node-api.php/disconnect');
    assert.deepEqual(Object.fromEntries(new URLSearchParams(sent.body)), {
      profile_id: 'employees',
      common_name: CN_ALICE,
      ip_four: '10.77.0.2',
      ip_six: 'fd77::2',
      bytes_in: '2187',
      bytes_out: '2230',
      age_ms: '61200',
    });
    await assert.rejects(
      clientAnswering(() => new Response('nope', { status: 500 })).reportDisconnect(report),
      /answered 500/,
    );
  });

  test("a burst of 1,000 questions stays within a real portal's default cap of 256 connections per address: none is refused, every one is answered", async (t) => {
    const warnings: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        warnings.push(chunk.toString('utf8'));
        done();
      },
    });
    const portal = await startTestPortal({ logger: createLogger('warn', sink) });
    t.after(() => portal.close());
    const client = new PortalClient({
      apiUrl: new URL(portal.nodeApiUrl),
      nodeNumber: asNodeNumber(0),
      nodeKey: new Secret(readFileSync(path.join(portal.dataDir, 'keys', 'node.0.key'), 'utf8').trim()),
      profileIdList: [],
      openVpn: { user: 'nobody', group: 'nogroup', preferAes: true, managementDir: '/run/x' },
    });
    const verdicts = await Promise.all(Array.from({ length: 1000 }, () => client.authorizeConnect(request)));
    // An unknown certificate: the portal says ERR. "Not answered" would mean a refused connection.
    const unanswered = verdicts.filter((verdict) => verdict.allowed || !verdict.portalAnswered);
    assert.equal(
      unanswered.length,
      0,
      `the portal answered every question; first not answered: ${JSON.stringify(unanswered[0])}`,
    );
    assert.deepEqual(
      warnings.filter((line) => line.includes('maxConnectionsPerAddress')),
      [],
      "the portal never had to refuse one of the node's connections",
    );
  });

  test('server_config tells the portal the OpenVPN user, group, cipher preference and socket folder', async () => {
    const sent: { body?: string } = {};
    await clientAnswering(() => new Response('{"wireguard":null}'), sent).fetchServerConfig();
    const form = new URLSearchParams(sent.body);
    assert.equal(form.get('vpn_user'), 'nobody');
    assert.equal(form.get('vpn_group'), 'nogroup');
    assert.equal(form.get('prefer_aes'), 'yes');
    assert.equal(form.get('management_dir'), '/run/x');
  });
});
