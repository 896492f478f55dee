import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { clientAddressesAt, gatewayAddresses, poolCapacity, poolIndexOf } from '../../src/wireguard/address-pool.js';

describe('client addresses come in IPv4/IPv6 pairs', () => {
  test('the first client gets network + 2 in both families', () => {
    assert.deepEqual(clientAddressesAt('10.44.44.0/29', 'fd44::/64', 0), { ipFour: '10.44.44.2', ipSix: 'fd44::2' });
  });

  test('client k gets network + 2 + k in both families, up to just below the broadcast address', () => {
    assert.deepEqual(clientAddressesAt('10.44.44.0/29', 'fd44::/64', 1), { ipFour: '10.44.44.3', ipSix: 'fd44::3' });
    assert.deepEqual(clientAddressesAt('10.44.44.0/29', 'fd44::/64', 4), { ipFour: '10.44.44.6', ipSix: 'fd44::6' });
    assert.deepEqual(clientAddressesAt('10.0.0.0/16', 'fd00:1::/64', 300), {
      ipFour: '10.0.1.46',
      ipSix: 'fd00:1::12e',
    });
  });

  test('ranges written with host bits are read as their network', () => {
    assert.deepEqual(clientAddressesAt('10.44.44.1/29', 'fd44::1/64', 0), { ipFour: '10.44.44.2', ipSix: 'fd44::2' });
  });

  test('an index outside the pool is refused', () => {
    assert.throws(() => clientAddressesAt('10.44.44.0/29', 'fd44::/64', 5), /outside the pool of 5/);
    assert.throws(() => clientAddressesAt('10.44.44.0/29', 'fd44::/64', -1), RangeError);
    assert.throws(() => clientAddressesAt('10.44.44.0/29', 'fd44::/64', 1.5), RangeError);
  });
});

describe('pool capacity skips network, gateway and broadcast', () => {
  test('holds 2^(32 − p4) − 3 clients', () => {
    assert.equal(poolCapacity('10.44.44.0/29', 'fd44::/64'), 5);
    assert.equal(poolCapacity('10.44.44.0/24', 'fd44::/64'), 253);
    assert.equal(poolCapacity('10.44.0.0/16', 'fd44::/64'), 65533);
    assert.equal(poolCapacity('10.44.44.0/30', 'fd44::/64'), 1);
  });

  test('refuses /31 and /32, which leave no room for a client', () => {
    assert.throws(() => poolCapacity('10.44.44.0/31', 'fd44::/64'), /too small/);
    assert.throws(() => poolCapacity('10.44.44.1/32', 'fd44::/64'), /too small/);
  });

  test('refuses an IPv6 range that cannot give every IPv4 client a partner', () => {
    // A /24 pairs up to network + 254; an IPv6 /121 only reaches network + 127.
    assert.throws(() => poolCapacity('10.44.44.0/24', 'fd44::/121'), /IPv6 range "fd44::\/121" is too small/);
    assert.equal(poolCapacity('10.44.44.0/24', 'fd44::/120'), 253);
    assert.throws(() => clientAddressesAt('10.44.44.0/24', 'fd44::/121', 0), /too small/);
  });

  test('refuses ranges of the wrong family', () => {
    assert.throws(() => poolCapacity('fd44::/64', 'fd44::/64'), /not an IPv4 prefix/);
    assert.throws(() => poolCapacity('10.44.44.0/24', '10.45.0.0/16'), /not an IPv6 prefix/);
  });
});

describe('the gateway is network + 1', () => {
  test('gives the node interface address used for @GW4@ and @GW6@', () => {
    assert.deepEqual(gatewayAddresses('10.44.44.0/29', 'fd44::/64'), { ipFour: '10.44.44.1', ipSix: 'fd44::1' });
    assert.deepEqual(gatewayAddresses('10.42.42.77/24', 'fd42:0:0:1::99/64'), {
      ipFour: '10.42.42.1',
      ipSix: 'fd42:0:0:1::1',
    });
  });
});

describe('an address pair issued elsewhere finds its place in the pool', () => {
  test('a pair at network + 2 + k in both families is index k', () => {
    assert.deepEqual(poolIndexOf('10.0.0.0/16', 'fd00:1::/64', { ipFour: '10.0.1.46', ipSix: 'fd00:1::12e' }), {
      index: 300,
    });
    assert.deepEqual(poolIndexOf('10.44.44.0/29', 'fd44::/64', { ipFour: '10.44.44.2', ipSix: 'fd44::2' }), {
      index: 0,
    });
  });

  test('an address outside the ranges, or the network, gateway or broadcast address, has no place', () => {
    for (const ipFour of ['10.44.45.2', '10.44.44.0', '10.44.44.1', '10.44.44.7']) {
      assert.deepEqual(poolIndexOf('10.44.44.0/29', 'fd44::/64', { ipFour, ipSix: 'fd44::2' }), { problem: 'outside' });
    }
    assert.deepEqual(poolIndexOf('10.44.44.0/29', 'fd44::/64', { ipFour: '10.44.44.2', ipSix: 'fd45::2' }), {
      problem: 'outside',
    });
    assert.deepEqual(poolIndexOf('10.44.44.0/29', 'fd44::/64', { ipFour: 'not an address', ipSix: 'fd44::2' }), {
      problem: 'outside',
    });
  });

  test('an IPv6 address that is not the partner of the IPv4 one cannot be held by the pool', () => {
    assert.deepEqual(poolIndexOf('10.44.44.0/29', 'fd44::/64', { ipFour: '10.44.44.3', ipSix: 'fd44::2' }), {
      problem: 'unpaired',
    });
  });
});
