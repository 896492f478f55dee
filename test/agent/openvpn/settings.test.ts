// The OpenVPN section of the node agent's configuration file: defaults, paths, mistakes named.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cpuInfoHasAes } from '../../../src/agent/openvpn/aes-support.js';
import { NodeAgentConfigError, parseNodeAgentConfig } from '../../../src/agent/config.js';

describe('the OpenVPN section of the node configuration', () => {
  test('has defaults for a packaged installation', () => {
    const config = parseNodeAgentConfig({ nodeKeyFile: 'node.key' }, '/etc/vpn-portal-node/node.json');
    assert.deepEqual(config.openVpn, {
      configDir: '/var/lib/vpn-portal-node/openvpn',
      managementDir: '/run/vpn-portal-node/openvpn',
      user: 'nobody',
      group: 'nogroup',
      preferAes: 'auto',
      binary: 'openvpn',
    });
  });

  test("takes relative paths from the configuration file's folder", () => {
    const config = parseNodeAgentConfig(
      {
        nodeKeyFile: 'node.key',
        OpenVPN: {
          configDir: 'servers',
          managementDir: 'run',
          user: 'openvpn',
          group: 'openvpn',
          preferAes: 'no',
          binary: './bin/openvpn',
        },
      },
      '/etc/vpn-portal-node/node.json',
    );
    assert.deepEqual(config.openVpn, {
      configDir: '/etc/vpn-portal-node/servers',
      managementDir: '/etc/vpn-portal-node/run',
      user: 'openvpn',
      group: 'openvpn',
      preferAes: 'no',
      binary: '/etc/vpn-portal-node/bin/openvpn',
    });
  });

  test('refuses what the portal would refuse, naming the key', () => {
    const refused: [unknown, RegExp][] = [
      [{ OpenVPN: { user: 'no body' } }, /"OpenVPN\.user"/],
      [{ OpenVPN: { group: 'wheel;' } }, /"OpenVPN\.group"/],
      [{ OpenVPN: { preferAes: 'maybe' } }, /"OpenVPN\.preferAes"/],
      [{ OpenVPN: { managementDir: '/run/open vpn' } }, /"OpenVPN\.managementDir"/],
      [{ OpenVPN: { socketDir: '/run' } }, /unknown key "OpenVPN\.socketDir"/],
    ];
    for (const [section, pattern] of refused) {
      assert.throws(
        () => parseNodeAgentConfig({ nodeKeyFile: 'node.key', ...(section as object) }, '/etc/node.json'),
        (error: unknown) => {
          assert.ok(error instanceof NodeAgentConfigError, `a configuration error, not ${String(error)}`);
          assert.match(error.message, pattern);
          return true;
        },
      );
    }
  });

  test('"auto" prefers AES when the CPU lists AES instructions', () => {
    assert.equal(cpuInfoHasAes('processor\t: 0\nflags\t\t: fpu vme sse2 aes avx\n'), true);
    assert.equal(cpuInfoHasAes('processor\t: 0\nflags\t\t: fpu vme sse2 avx\n'), false);
    assert.equal(cpuInfoHasAes('Features\t: fp asimd aes pmull sha1\n'), true);
    assert.equal(cpuInfoHasAes('flags\t\t: fpu vaes avx\n'), false);
  });
});
