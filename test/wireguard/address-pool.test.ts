import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { clientAddressesAt, gatewayAddresses, poolCapacity } from '../../src/wireguard/address-pool.js';

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
