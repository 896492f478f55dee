import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { asWireGuardKey } from '../../src/shared/ids.js';
import {
  renderWireGuardClientConfig,
  type WireGuardClientConfiguration,
  type WireGuardClientProfile,
} from '../../src/wireguard/client-config.js';

const CLIENT_PRIVATE_KEY = asWireGuardKey('yDeSuJ6l5zHqh8Qf4dPQbgiy1AxRQGq6yVhvt7qIvXc=');
const SERVER_PUBLIC_KEY = asWireGuardKey('HsM8hTAaK8mGnQ56MHmC7aQ3Sf4STJeG8EEIAa5OE3g=');

/** The upstream test fixture: profile default-wg, full tunnel, host vpn.example. */
function referenceProfile(overrides: Partial<WireGuardClientProfile> = {}): WireGuardClientProfile {
  return {
    hostName: 'vpn.example',
    listenPort: 51820,
    mtu: null,
    serverPublicKey: SERVER_PUBLIC_KEY,
    rangeFour: '10.44.44.0/29',
    rangeSix: 'fd44::/64',
    defaultGateway: true,
    dnsServerList: ['9.9.9.9', '2620:fe::fe'],
    dnsSearchDomainList: [],
    routeList: [],
    excludeRouteList: [],
    keepAlive: false,
    proxyEndpoint: null,
    ...overrides,
  };
}

const firstClient: WireGuardClientConfiguration = {
  privateKey: CLIENT_PRIVATE_KEY,
  ipFour: '10.44.44.2',
  ipSix: 'fd44::2',
};

const lines = (...text: string[]): string => text.join('\n');

describe('the wg-quick client file', () => {
  test('reproduces the reference fixture without comments, ending in a newline as a text file does', () => {
    assert.equal(
      renderWireGuardClientConfig(referenceProfile(), firstClient),
      lines(
        '[Interface]',
        `PrivateKey = ${CLIENT_PRIVATE_KEY}`,
        'Address = 10.44.44.2/29,fd44::2/64',
        'DNS = 9.9.9.9,2620:fe::fe',
        '',
        '[Peer]',
        `PublicKey = ${SERVER_PUBLIC_KEY}`,
        'AllowedIPs = 0.0.0.0/0,::/0',
        'Endpoint = vpn.example:51820',
        '',
      ),
    );
  });

  test('puts MTU first in [Interface] when the portal sets one', () => {
    const text = renderWireGuardClientConfig(referenceProfile({ mtu: 1392 }), firstClient);
    assert.ok(text.startsWith(lines('[Interface]', 'MTU = 1392', `PrivateKey = ${CLIENT_PRIVATE_KEY}`)), text);
  });

  test('adds keep-alive just before the endpoint when the profile asks for it', () => {
    const text = renderWireGuardClientConfig(referenceProfile({ keepAlive: true }), firstClient);
    assert.ok(
      text.endsWith(lines('AllowedIPs = 0.0.0.0/0,::/0', 'PersistentKeepalive = 25', 'Endpoint = vpn.example:51820\n')),
      text,
    );
  });

  test('uses the portal-wide listen port in the endpoint', () => {
    const text = renderWireGuardClientConfig(referenceProfile({ listenPort: 443 }), firstClient);
    assert.ok(text.endsWith('\nEndpoint = vpn.example:443\n'), text);
  });

  test('brackets an IPv6 literal host so the port stays unambiguous', () => {
    const text = renderWireGuardClientConfig(referenceProfile({ hostName: '2001:db8::53' }), firstClient);
    assert.ok(text.endsWith('\nEndpoint = [2001:db8::53]:51820\n'), text);
    const v4 = renderWireGuardClientConfig(referenceProfile({ hostName: '192.0.2.7' }), firstClient);
    assert.ok(v4.endsWith('\nEndpoint = 192.0.2.7:51820\n'), v4);
  });

  test('sends WireGuard over TCP to the local ProxyGuard and names the real endpoint separately', () => {
    const text = renderWireGuardClientConfig(
      referenceProfile({
        keepAlive: true,
        listenPort: 443,
        proxyEndpoint: 'https://vpn.example/proxyguard/vpn.example',
      }),
      firstClient,
    );
    assert.ok(
      text.endsWith(
        lines(
          'PersistentKeepalive = 25',
          'Endpoint = 127.0.0.1:51820',
          'ProxyEndpoint = https://vpn.example/proxyguard/vpn.example',
          '',
        ),
      ),
      text,
    );
  });
});

describe('the DNS line', () => {
  test('replaces @GW4@ and @GW6@ with the first host of the client ranges', () => {
    const text = renderWireGuardClientConfig(referenceProfile({ dnsServerList: ['@GW4@', '@GW6@'] }), firstClient);
    assert.match(text, /^DNS = 10\.44\.44\.1,fd44::1$/m);
  });

  test('without a default gateway, is left out entirely when there are no search domains', () => {
    const text = renderWireGuardClientConfig(
      referenceProfile({ defaultGateway: false, routeList: ['192.168.1.0/24'] }),
      firstClient,
    );
    assert.doesNotMatch(text, /^DNS/m);
  });

  test('without a default gateway, still carries servers and de-duplicated search domains when domains are set', () => {
    const text = renderWireGuardClientConfig(
      referenceProfile({
        defaultGateway: false,
        dnsServerList: ['192.168.1.53'],
        dnsSearchDomainList: ['example.org', 'b.example', 'example.org'],
        routeList: ['192.168.1.0/24'],
      }),
      firstClient,
    );
    assert.match(text, /^DNS = 192\.168\.1\.53,example\.org,b\.example$/m);
  });

  test('lists search domains even when no DNS servers are configured', () => {
    const text = renderWireGuardClientConfig(
      referenceProfile({ dnsServerList: [], dnsSearchDomainList: ['example.org'] }),
      firstClient,
    );
    assert.match(text, /^DNS = example\.org$/m);
  });

  test('appends search domains after the servers on a full tunnel too', () => {
    const text = renderWireGuardClientConfig(referenceProfile({ dnsSearchDomainList: ['example.org'] }), firstClient);
    assert.match(text, /^DNS = 9\.9\.9\.9,2620:fe::fe,example\.org$/m);
  });

  test('is omitted when a full tunnel has neither servers nor domains', () => {
    const text = renderWireGuardClientConfig(referenceProfile({ dnsServerList: [] }), firstClient);
    assert.doesNotMatch(text, /^DNS/m);
  });
});

describe('the peer routes', () => {
  test('a split tunnel routes its routes plus the client networks, minus the excludes', () => {
    const text = renderWireGuardClientConfig(
      referenceProfile({
        defaultGateway: false,
        rangeFour: '10.42.42.0/24',
        rangeSix: 'fd42::/64',
        routeList: ['192.168.1.0/24', 'fd11::/64'],
        excludeRouteList: ['192.168.1.5/32'],
      }),
      { privateKey: CLIENT_PRIVATE_KEY, ipFour: '10.42.42.2', ipSix: 'fd42::2' },
    );
    assert.match(text, /^Address = 10\.42\.42\.2\/24,fd42::2\/64$/m);
    assert.match(
      text,
      /^AllowedIPs = 10\.42\.42\.0\/24,192\.168\.1\.0\/30,192\.168\.1\.4\/32,192\.168\.1\.6\/31,192\.168\.1\.8\/29,192\.168\.1\.16\/28,192\.168\.1\.32\/27,192\.168\.1\.64\/26,192\.168\.1\.128\/25,fd11::\/64,fd42::\/64$/m,
    );
  });

  test('leaves AllowedIPs out when everything is excluded', () => {
    const text = renderWireGuardClientConfig(
      referenceProfile({ defaultGateway: false, excludeRouteList: ['0.0.0.0/0', '::/0'] }),
      firstClient,
    );
    assert.doesNotMatch(text, /AllowedIPs/);
  });
});

describe('client addresses', () => {
  test('are written canonically', () => {
    const text = renderWireGuardClientConfig(referenceProfile(), { ...firstClient, ipSix: 'FD44:0:0:0::2' });
    assert.match(text, /^Address = 10\.44\.44\.2\/29,fd44::2\/64$/m);
  });

  test('must belong to the profile ranges', () => {
    assert.throws(
      () => renderWireGuardClientConfig(referenceProfile(), { ...firstClient, ipFour: '10.44.45.2' }),
      /"10\.44\.45\.2" is not inside the profile range 10\.44\.44\.0\/29/,
    );
    assert.throws(
      () => renderWireGuardClientConfig(referenceProfile(), { ...firstClient, ipSix: '10.44.44.2' }),
      /not inside the profile range fd44::\/64/,
    );
  });
});
