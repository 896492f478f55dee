// The addresses the agent hands to OpenVPN clients, as OpenVPN's own pool would.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { allocateAddresses, poolLayoutFromEnv, pushDirectives } from '../../../src/agent/openvpn/address-pool.js';

const CN_ALICE = 'Im7TCdhaKqLm/Cc9UTxGhVcZ4VDXAhPbt3praxEbbsg=';

/** The variables OpenVPN 2.6 sends with >CLIENT:CONNECT (the parts that matter here). */
function connectEnv(commonName: string, organizationalUnit = 'employees'): Map<string, string> {
  return new Map([
    ['untrusted_ip', '198.18.250.2'],
    ['untrusted_port', '52080'],
    ['common_name', commonName],
    ['X509_0_CN', commonName],
    ['X509_0_OU', organizationalUnit],
    ['password', 'whatever-the-client-sent'],
    ['ifconfig_local', '10.77.0.1'],
    ['ifconfig_netmask', '255.255.255.0'],
    ['ifconfig_ipv6_local', 'fd77::1'],
    ['ifconfig_ipv6_netbits', '112'],
    ['ifconfig_ipv6_remote', 'fd77::2'],
  ]);
}

describe('addresses for OpenVPN clients', () => {
  test("come from the server's own pool, lowest free first, IPv4 and IPv6 paired", () => {
    const layout = poolLayoutFromEnv(connectEnv(CN_ALICE));
    assert.ok(layout !== null, 'the CONNECT variables describe the pool');
    const taken = new Set<string>();
    const first = allocateAddresses(layout, (address) => taken.has(address));
    assert.deepEqual(first, { ipFour: '10.77.0.2', ipSix: 'fd77::2' });
    taken.add('10.77.0.2').add('fd77::2').add('fd77::3');
    assert.deepEqual(
      allocateAddresses(layout, (address) => taken.has(address)),
      { ipFour: '10.77.0.4', ipSix: 'fd77::4' },
      'a pair with a taken half is skipped',
    );
    assert.deepEqual(pushDirectives(layout, { ipFour: '10.77.0.4', ipSix: 'fd77::4' }), [
      'ifconfig-push 10.77.0.4 255.255.255.0',
      'ifconfig-ipv6-push fd77::4/112 fd77::1',
    ]);
  });

  test('a full pool gives nothing; network, server and broadcast are never handed out', () => {
    const env = connectEnv(CN_ALICE);
    env.set('ifconfig_netmask', '255.255.255.252');
    env.delete('ifconfig_ipv6_local');
    const layout = poolLayoutFromEnv(env);
    assert.ok(layout !== null, 'a /30 is a pool');
    const taken = new Set<string>();
    const only = allocateAddresses(layout, (address) => taken.has(address));
    assert.deepEqual(only, { ipFour: '10.77.0.2', ipSix: null });
    taken.add('10.77.0.2');
    assert.equal(
      allocateAddresses(layout, (address) => taken.has(address)),
      null,
    );
    assert.deepEqual(pushDirectives(layout, { ipFour: '10.77.0.2', ipSix: null }), [
      'ifconfig-push 10.77.0.2 255.255.255.252',
    ]);
  });

  test('variables that do not describe a subnet pool give no layout', () => {
    const env = connectEnv(CN_ALICE);
    env.set('ifconfig_netmask', '255.0.255.0');
    assert.equal(poolLayoutFromEnv(env), null);
    env.delete('ifconfig_netmask');
    assert.equal(poolLayoutFromEnv(env), null);
  });
});
