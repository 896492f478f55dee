// The options of WireGuard over TCP as administrators write them: the portal's
// WireGuard.enableProxy / onlyProxy / proxyUrl, and the node agent's ProxyGuard section.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, resolvePortalConfig } from '../../src/config/load.js';
import type { PortalConfigFile } from '../../src/config/schema.js';
import { NodeAgentConfigError, parseNodeAgentConfig } from '../../src/agent/config.js';

function portalConfig(wireGuard: PortalConfigFile['WireGuard']) {
  return resolvePortalConfig(
    {
      dataDir: '/var/lib/vpn-portal',
      ...(wireGuard === undefined ? {} : { WireGuard: wireGuard }),
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          wRangeFour: '10.44.0.0/24',
          wRangeSix: 'fd44::/64',
        },
      ],
    },
    'portal.json',
  );
}

function problemsOf(wireGuard: PortalConfigFile['WireGuard']): string {
  try {
    portalConfig(wireGuard);
  } catch (error) {
    assert.ok(error instanceof ConfigError, `a ConfigError, not ${String(error)}`);
    return error.message;
  }
  assert.fail('the configuration was accepted');
}

describe("the portal's WireGuard-over-TCP options", () => {
  test('are off by default', () => {
    assert.deepEqual(portalConfig(undefined).wireGuard, { listenPort: 51820, mtu: null, proxy: { enabled: false } });
    assert.deepEqual(portalConfig({ setMtu: 1392 }).wireGuard.proxy, { enabled: false });
  });

  test('enableProxy offers TCP next to UDP; onlyProxy instead of it; proxyUrl loses its trailing slashes', () => {
    assert.deepEqual(portalConfig({ enableProxy: true }).wireGuard.proxy, {
      enabled: true,
      only: false,
      proxyUrl: null,
    });
    assert.deepEqual(
      portalConfig({ enableProxy: true, onlyProxy: true, proxyUrl: 'https://proxy.example.org/pg//' }).wireGuard.proxy,
      {
        enabled: true,
        only: true,
        proxyUrl: 'https://proxy.example.org/pg',
      },
    );
  });

  test('mistakes name the option', () => {
    assert.match(problemsOf({ onlyProxy: true }), /portal\.json: WireGuard\.onlyProxy: needs "enableProxy": true/);
    assert.match(
      problemsOf({ enableProxy: true, proxyUrl: 'ftp://proxy.example.org/' }),
      /portal\.json: WireGuard\.proxyUrl/,
    );
    for (const proxyUrl of [
      'https://proxy.example.org/pg?node=',
      'https://proxy.example.org/pg#',
      'https://proxy.example.org/pg?',
    ])
      assert.match(
        problemsOf({ enableProxy: true, proxyUrl }),
        /WireGuard\.proxyUrl: .* must not have a query or fragment/,
        proxyUrl,
      );
    assert.match(
      problemsOf({ enableProxy: 'yes' } as unknown as PortalConfigFile['WireGuard']),
      /WireGuard\.enableProxy/,
    );
    assert.match(
      problemsOf({ enableProxy: true, proxy: true } as unknown as PortalConfigFile['WireGuard']),
      /WireGuard: Unrecognized key: "proxy"/,
    );
  });
});

describe("the node agent's ProxyGuard section", () => {
  test('defaults to loopback port 51821, 1000 tunnels, a 10-minute idle timeout, 64 handshakes of at most 5 s, no proxy believed', () => {
    const config = parseNodeAgentConfig({ nodeKeyFile: 'node.key' }, '/etc/vpn-portal-node/node.json');
    assert.deepEqual(config.proxyGuard, {
      listen: { host: '127.0.0.1', port: 51821 },
      maxTunnels: 1000,
      idleTimeoutMs: 600_000,
      maxPendingRequests: 64,
      requestTimeoutMs: 5_000,
      trustedProxyList: [],
    });
  });

  test('is read as written', () => {
    const config = parseNodeAgentConfig(
      {
        nodeKeyFile: 'node.key',
        ProxyGuard: {
          listen: { host: '10.0.0.11', port: 8443 },
          maxTunnels: 20,
          idleTimeoutSeconds: 30,
          maxPendingRequests: 8,
          requestTimeoutSeconds: 2,
          trustedProxyList: ['10.0.0.2/32'],
        },
      },
      '/etc/vpn-portal-node/node.json',
    );
    assert.deepEqual(config.proxyGuard, {
      listen: { host: '10.0.0.11', port: 8443 },
      maxTunnels: 20,
      idleTimeoutMs: 30_000,
      maxPendingRequests: 8,
      requestTimeoutMs: 2_000,
      trustedProxyList: ['10.0.0.2/32'],
    });
  });

  test('refuses unknown keys and values out of range, naming them', () => {
    const refused: [unknown, RegExp][] = [
      [{ ProxyGuard: { maxTunnel: 5 } }, /unknown key "ProxyGuard\.maxTunnel"/],
      [{ ProxyGuard: { maxTunnels: 0 } }, /"ProxyGuard\.maxTunnels"/],
      [{ ProxyGuard: { listen: { port: 70000 } } }, /"ProxyGuard\.listen\.port"/],
      [{ ProxyGuard: { idleTimeoutSeconds: 0 } }, /"ProxyGuard\.idleTimeoutSeconds"/],
      [{ ProxyGuard: { maxPendingRequests: 0 } }, /"ProxyGuard\.maxPendingRequests"/],
      [{ ProxyGuard: { requestTimeoutSeconds: 61 } }, /"ProxyGuard\.requestTimeoutSeconds"/],
    ];
    for (const [section, pattern] of refused) {
      assert.throws(
        () => parseNodeAgentConfig({ nodeKeyFile: 'node.key', ...(section as object) }, 'node.json'),
        (error: unknown) => {
          assert.ok(error instanceof NodeAgentConfigError, `a configuration error, not ${String(error)}`);
          assert.match(error.message, pattern);
          return true;
        },
      );
    }
  });
});
