// The client an address stands for: an IPv4 address itself (also IPv4-mapped), an IPv6 address's /64.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientNetwork } from '../../src/net/client-network.js';

test('an IPv4 client is its address, written plainly or IPv4-mapped', () => {
  assert.equal(clientNetwork('192.0.2.7'), '192.0.2.7');
  assert.equal(clientNetwork('::ffff:192.0.2.7'), '192.0.2.7');
  assert.notEqual(clientNetwork('192.0.2.7'), clientNetwork('192.0.2.8'));
});

test('an IPv6 client is its /64: addresses in one /64 are one client, another /64 is another', () => {
  assert.equal(clientNetwork('2001:db8:1:2::1'), '2001:db8:1:2::/64');
  assert.equal(clientNetwork('2001:DB8:1:2:abcd:ef01:2345:6789'), '2001:db8:1:2::/64');
  assert.equal(clientNetwork('2001:db8:1:3::1'), '2001:db8:1:3::/64');
  assert.equal(clientNetwork('::1'), '::/64');
});

test('what is not an address is taken as given', () => {
  assert.equal(clientNetwork('local'), 'local');
  assert.equal(clientNetwork('fe80::1%eth0'), 'fe80::1%eth0');
});
