// The address guard of webhook requests: every range that is not the public Internet is
// refused, judged also through IPv4-mapped and NAT64 forms, as are the portal's own addresses;
// an allow-listed prefix lets exactly its addresses through.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TargetGuard } from '../../src/core/webhook-sender.js';

test('loopback, link-local, private, shared, multicast and mapped forms are refused; public addresses pass', () => {
  const guard = new TargetGuard({ allowPrivateTargets: [] }, '127.0.0.1');
  const refused: [string, string][] = [
    ['127.0.0.53', 'a loopback (127.0.0.0/8) address'],
    ['::1', 'a loopback (::1/128) address'],
    ['169.254.169.254', 'a link-local (169.254.0.0/16) address'],
    ['fe80::1', 'a link-local (fe80::/10) address'],
    ['10.0.0.1', 'a private (RFC 1918) (10.0.0.0/8) address'],
    ['172.31.255.255', 'a private (RFC 1918) (172.16.0.0/12) address'],
    ['192.168.0.1', 'a private (RFC 1918) (192.168.0.0/16) address'],
    ['100.100.100.100', 'a shared address space (CGNAT) (100.64.0.0/10) address'],
    ['fd12:3456::1', 'a unique local (ULA) (fc00::/7) address'],
    ['224.0.0.1', 'a multicast (224.0.0.0/4) address'],
    ['::ffff:10.1.2.3', 'a private (RFC 1918) (10.0.0.0/8) address'],
    ['64:ff9b::7f00:1', 'a loopback (127.0.0.0/8) address'],
    ['0.0.0.0', 'an unspecified ("this network") (0.0.0.0/8) address'],
    ['192.0.0.8', 'an IETF protocol assignments (192.0.0.0/24) address'],
  ];
  for (const [address, reason] of refused) assert.equal(guard.refusal(address), reason, address);
  for (const address of ['192.0.2.1', '8.8.8.8', '2001:db8::1', '172.32.0.1', '100.128.0.1']) assert.equal(guard.refusal(address), null, address);
});

test("the portal's own listen address is refused although it is public, unless allow-listed; the allow-list is exact", () => {
  const guard = new TargetGuard({ allowPrivateTargets: [] }, '198.51.100.7');
  assert.equal(guard.refusal('198.51.100.7'), "an address of the portal's own host");
  assert.equal(guard.refusal('198.51.100.8'), null);
  const allowing = new TargetGuard({ allowPrivateTargets: ['198.51.100.7/32', '10.20.0.0/16', 'fd00:1::/32'] }, '198.51.100.7');
  assert.equal(allowing.refusal('198.51.100.7'), null);
  assert.equal(allowing.refusal('10.20.99.1'), null);
  assert.equal(allowing.refusal('::ffff:10.20.99.1'), null, 'an IPv4-mapped form of an allowed address');
  assert.equal(allowing.refusal('10.21.0.1'), 'a private (RFC 1918) (10.0.0.0/8) address');
  assert.equal(allowing.refusal('fd00:1::5'), null);
  assert.equal(allowing.refusal('fd00:2::5'), 'a unique local (ULA) (fc00::/7) address');
});
