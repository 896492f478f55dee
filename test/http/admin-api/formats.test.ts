// POST /create in each of the specification's four formats: which one an administrator gets
// for an Accept header, depending on WireGuard.enableProxy / onlyProxy and prefer_tcp; the
// WireGuard-over-TCP file with its ProxyEndpoint; the Apple profile as a download; and the
// refusals (406), which create nothing. Also what the node agent is told about ProxyGuard.
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { parse } from 'plist';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { asNodeNumber, type WireGuardKey } from '../../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import { errorBody, rawRequest, type RawResponse } from '../../support/raw-http.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

const WIREGUARD = 'application/x-wireguard-profile';
const WIREGUARD_TCP = 'application/x-wireguard+tcp-profile';
const APPLE = 'application/x-apple-aspen-config';
const OPENVPN = 'application/x-openvpn-profile';
const HOST_NAME = 'vpn.example.org';

async function portalWith(
  t: TestContext,
  wireGuard: PortalConfigFile['WireGuard'],
  baseUrl = 'https://portal.example.org/vpn-user-portal/',
): Promise<TestPortal> {
  const portal = await startTestPortal({
    config: { baseUrl, ...(wireGuard === undefined ? {} : { WireGuard: wireGuard }) },
  });
  t.after(() => portal.close());
  return portal;
}

/** POST /create with exactly this Accept header (`null`: none at all, which fetch cannot send). */
function create(portal: TestPortal, accept: string | null, form: Record<string, string> = {}): Promise<RawResponse> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${portal.secret}`,
    'content-type': 'application/x-www-form-urlencoded',
  };
  if (accept !== null) headers['accept'] = accept;
  const body = new URLSearchParams({ user_id: 'alice', profile_id: 'employees', ...form }).toString();
  return rawRequest(`${portal.adminBase}/create`, { method: 'POST', headers, body });
}

async function configurationCount(portal: TestPortal): Promise<number> {
  return (await portal.portal.ctx.db.selectFrom('wg_peers').select('public_key').execute()).length;
}

function assertRefused(response: RawResponse, server: string, why: string): void {
  assert.equal(response.status, 406, `${why}: ${response.text}`);
  assert.match(response.headers['content-type'] ?? '', /^application\/json/);
  assert.match(
    errorBody(response.text),
    new RegExp(`^no common VPN protocol \\[CLIENT=.+ SERVER=${server.replaceAll('+', '\\+')}\\]$`),
    why,
  );
}

describe('the four Accept types of the specification', () => {
  test('WireGuard, WireGuard over TCP and the Apple profile are served; OpenVPN is not', async (t) => {
    const portal = await portalWith(t, { enableProxy: true });

    const udp = await create(portal, WIREGUARD);
    assert.equal(udp.status, 200, udp.text);
    assert.equal(udp.headers['content-type'], WIREGUARD);
    assert.equal(udp.headers['content-disposition'], undefined, 'a WireGuard file is shown, not downloaded');
    assert.equal(parseWireGuardFile(udp.text).peer.get('Endpoint'), `${HOST_NAME}:51820`);

    const tcp = await create(portal, WIREGUARD_TCP);
    assert.equal(tcp.status, 200, tcp.text);
    assert.equal(tcp.headers['content-type'], WIREGUARD_TCP);
    assert.equal(tcp.headers['content-disposition'], undefined);
    const tcpFile = parseWireGuardFile(tcp.text);
    assert.deepEqual([...tcpFile.peer.keys()], ['PublicKey', 'AllowedIPs', 'Endpoint', 'ProxyEndpoint']);
    assert.equal(tcpFile.peer.get('Endpoint'), '127.0.0.1:51820');
    assert.equal(tcpFile.peer.get('ProxyEndpoint'), `https://portal.example.org/proxyguard/${HOST_NAME}`);

    const apple = await create(portal, APPLE);
    assert.equal(apple.status, 200, apple.text);
    assert.equal(apple.headers['content-type'], APPLE);
    assert.equal(apple.headers['content-disposition'], 'attachment; filename="employees.mobileconfig"');
    const plist = parse(apple.text) as {
      PayloadType: string;
      PayloadContent: { VendorConfig: { WgQuickConfig: string } }[];
    };
    assert.equal(plist.PayloadType, 'Configuration');
    const embedded = parseWireGuardFile(plist.PayloadContent[0]?.VendorConfig.WgQuickConfig ?? '');
    assert.equal(embedded.peer.get('Endpoint'), `${HOST_NAME}:51820`, 'the Apple profile carries WireGuard over UDP');

    assertRefused(await create(portal, OPENVPN), `${WIREGUARD},${WIREGUARD_TCP},${APPLE}`, 'OpenVPN');
    assert.equal(await configurationCount(portal), 3, 'one configuration per served file, none for the refusal');
  });

  test("every file belongs to a listed configuration whose connection_id is the file's public key", async (t) => {
    const portal = await portalWith(t, { enableProxy: true });
    const privateKeys: string[] = [];
    for (const accept of [WIREGUARD, WIREGUARD_TCP]) {
      const response = await create(portal, accept, { display_name: accept });
      privateKeys.push(parseWireGuardFile(response.text).interface.get('PrivateKey') ?? '');
    }
    const apple = parse((await create(portal, APPLE, { display_name: APPLE })).text) as {
      PayloadContent: { VendorConfig: { WgQuickConfig: string } }[];
    };
    privateKeys.push(
      parseWireGuardFile(apple.PayloadContent[0]?.VendorConfig.WgQuickConfig ?? '').interface.get('PrivateKey') ?? '',
    );

    const listed = await portal.admin.userConfigurationList('alice');
    const byName = new Map(listed.map((entry) => [entry.display_name, entry]));
    for (const [index, accept] of [WIREGUARD, WIREGUARD_TCP, APPLE].entries()) {
      const entry = byName.get(accept);
      assert.equal(entry?.vpn_proto, 'wireguard', `${accept} is a WireGuard configuration`);
      assert.equal(
        entry?.connection_id,
        wireGuardPublicKey(privateKeys[index] as WireGuardKey),
        `${accept}: the listed key matches the file`,
      );
    }
  });
});

describe('WireGuard.enableProxy and WireGuard.onlyProxy', () => {
  test('without enableProxy WireGuard over TCP is refused with 406 and nothing is created', async (t) => {
    const portal = await portalWith(t, undefined);
    assertRefused(await create(portal, WIREGUARD_TCP), `${WIREGUARD},${APPLE}`, 'TCP without enableProxy');
    assert.deepEqual((await portal.get('/users')).json(), { users: [] });
    assert.equal(await configurationCount(portal), 0);
  });

  test('with onlyProxy only WireGuard over TCP is served: UDP, Apple and no Accept at all answer 406', async (t) => {
    const portal = await portalWith(t, { enableProxy: true, onlyProxy: true });
    assertRefused(await create(portal, WIREGUARD), WIREGUARD_TCP, 'UDP with onlyProxy');
    assertRefused(await create(portal, APPLE), WIREGUARD_TCP, 'Apple with onlyProxy');
    // WireGuard over TCP has to be named: a wildcard or a missing header never selects it.
    assertRefused(await create(portal, null), WIREGUARD_TCP, 'no Accept header');
    assertRefused(await create(portal, '*/*'), WIREGUARD_TCP, '*/*');
    assert.equal(await configurationCount(portal), 0);

    const tcp = await create(portal, `${WIREGUARD}, ${WIREGUARD_TCP}`);
    assert.equal(tcp.status, 200, tcp.text);
    assert.equal(tcp.headers['content-type'], WIREGUARD_TCP);
  });
});

describe('choosing between the formats a client accepts', () => {
  test('the server prefers UDP; prefer_tcp=yes puts TCP first, but only when the client names it', async (t) => {
    const portal = await portalWith(t, { enableProxy: true });
    const both = `${WIREGUARD}, ${WIREGUARD_TCP}`;
    const cases: { accept: string | null; preferTcp: 'yes' | 'no'; expected: string }[] = [
      { accept: both, preferTcp: 'no', expected: WIREGUARD },
      { accept: both, preferTcp: 'yes', expected: WIREGUARD_TCP },
      { accept: `${WIREGUARD_TCP}, ${WIREGUARD}`, preferTcp: 'no', expected: WIREGUARD },
      { accept: '*/*', preferTcp: 'yes', expected: WIREGUARD },
      { accept: null, preferTcp: 'yes', expected: WIREGUARD },
      { accept: 'application/*', preferTcp: 'yes', expected: WIREGUARD },
      { accept: `${WIREGUARD_TCP};q=0.5, ${WIREGUARD}`, preferTcp: 'yes', expected: WIREGUARD },
      { accept: `${APPLE}, ${WIREGUARD}`, preferTcp: 'no', expected: WIREGUARD },
      { accept: `${APPLE}, ${WIREGUARD};q=0.9`, preferTcp: 'no', expected: APPLE },
      { accept: `${APPLE}, ${WIREGUARD_TCP}`, preferTcp: 'yes', expected: WIREGUARD_TCP },
    ];
    for (const { accept, preferTcp, expected } of cases) {
      const response = await create(portal, accept, { prefer_tcp: preferTcp });
      assert.equal(response.status, 200, `${String(accept)} prefer_tcp=${preferTcp}: ${response.text}`);
      assert.equal(response.headers['content-type'], expected, `${String(accept)} prefer_tcp=${preferTcp}`);
    }
  });

  test('a wildcard never yields the Apple profile either', async (t) => {
    const portal = await portalWith(t, undefined);
    for (const accept of ['*/*', 'application/*', `${APPLE};q=0, */*`]) {
      const response = await create(portal, accept);
      assert.equal(response.headers['content-type'], WIREGUARD, accept);
    }
    assertRefused(await create(portal, `${APPLE};q=0`), `${WIREGUARD},${APPLE}`, 'Apple excluded with q=0');
  });
});

describe('the ProxyEndpoint of a WireGuard-over-TCP file', () => {
  const proxyEndpointOf = async (portal: TestPortal): Promise<string | undefined> => {
    const response = await create(portal, WIREGUARD_TCP);
    assert.equal(response.status, 200, response.text);
    return parseWireGuardFile(response.text).peer.get('ProxyEndpoint');
  };

  test('is https://<portal host>/proxyguard/<node host name> without proxyUrl, whatever scheme and port the portal has', async (t) => {
    const portal = await portalWith(t, { enableProxy: true }, 'http://portal.example.org:8080/vpn-user-portal/');
    assert.equal(await proxyEndpointOf(portal), `https://portal.example.org/proxyguard/${HOST_NAME}`);
  });

  test('is <proxyUrl>/<node host name> with proxyUrl, trailing slashes dropped', async (t) => {
    const portal = await portalWith(t, { enableProxy: true, proxyUrl: 'https://proxy.example.org:8443/tcp///' });
    assert.equal(await proxyEndpointOf(portal), `https://proxy.example.org:8443/tcp/${HOST_NAME}`);
  });

  test('keeps Endpoint at the local ProxyGuard client whatever the WireGuard port, with keep-alive before it', async (t) => {
    const portal = await startTestPortal({
      config: {
        WireGuard: { enableProxy: true, listenPort: 443 },
        ProfileList: [
          {
            profileId: 'employees',
            displayName: 'Employees',
            hostName: HOST_NAME,
            wRangeFour: '10.44.0.0/24',
            wRangeSix: 'fd44::/64',
            wKeepAlive: true,
            nodeUrl: 'http://127.0.0.1:9',
          },
        ],
      },
    });
    t.after(() => portal.close());
    const file = parseWireGuardFile((await create(portal, WIREGUARD_TCP)).text);
    assert.deepEqual([...file.peer.entries()].slice(2), [
      ['PersistentKeepalive', '25'],
      ['Endpoint', '127.0.0.1:51820'],
      ['ProxyEndpoint', `https://127.0.0.1/proxyguard/${HOST_NAME}`],
    ]);
  });
});

describe('what the node agent is told', () => {
  const serverConfigOf = async (
    portal: TestPortal,
  ): Promise<{ wireguard: { listenPort: number; proxyGuard: unknown } }> => {
    const response = await fetch(`${portal.nodeApiUrl}/server_config`, {
      method: 'POST',
      headers: {
        'x-node-number': '0',
        authorization: `Bearer ${portal.portal.ctx.keys.nodeSecret(asNodeNumber(0)) ?? ''}`,
      },
    });
    assert.equal(response.status, 200);
    return (await response.json()) as { wireguard: { listenPort: number; proxyGuard: unknown } };
  };

  test("with enableProxy: run the ProxyGuard relay for the node's host names", async (t) => {
    const portal = await portalWith(t, { enableProxy: true });
    assert.deepEqual((await serverConfigOf(portal)).wireguard.proxyGuard, { hostNames: [HOST_NAME] });
  });

  test('without it: no relay', async (t) => {
    const portal = await portalWith(t, undefined);
    assert.equal((await serverConfigOf(portal)).wireguard.proxyGuard, null);
  });
});
