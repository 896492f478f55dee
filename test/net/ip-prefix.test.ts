import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  addressAt,
  formatIpAddress,
  formatIpPrefix,
  halvePrefix,
  ipAddressFamily,
  isIpAddress,
  isIpPrefix,
  parseIpAddress,
  parseIpPrefix,
  prefixContains,
  prefixContainsAddress,
  prefixesOverlap,
  prefixSize,
  splitPrefix,
} from '../../src/net/ip-prefix.js';

const canonical = (text: string): string => formatIpPrefix(parseIpPrefix(text));
const canonicalAddress = (text: string): string => formatIpAddress(parseIpAddress(text));

describe('parsing a CIDR prefix', () => {
  test('reads the family and prefix length of IPv4 and IPv6 prefixes', () => {
    assert.deepEqual(parseIpPrefix('10.0.0.0/24'), { family: 4, network: 0x0a000000n, length: 24 });
    assert.deepEqual(parseIpPrefix('fd00::/64'), { family: 6, network: 0xfd00n << 112n, length: 64 });
  });

  test('accepts host bits and normalises them to the network address', () => {
    assert.equal(canonical('10.42.42.2/24'), '10.42.42.0/24');
    assert.equal(canonical('192.168.1.5/30'), '192.168.1.4/30');
    assert.equal(canonical('fd42::1234/64'), 'fd42::/64');
    assert.equal(canonical('1.2.3.4/0'), '0.0.0.0/0');
    assert.equal(canonical('fd42::1/128'), 'fd42::1/128');
  });

  test('refuses anything that is not "<address>/<length>" with a message naming the input', () => {
    const invalid = [
      '10.0.0.0',
      '10.0.0.0/',
      '10.0.0.0/33',
      'fd00::/129',
      '10.0.0.0/024',
      '10.0.0.0/+8',
      '10.0.0.0/-1',
      '10.0.0/8',
      '010.0.0.0/8',
      '256.0.0.0/8',
      ' 10.0.0.0/8',
      '10.0.0.0/8 ',
      'fe80::1%eth0/64',
      '[fd00::]/64',
      'fd00:::/64',
      'example.org/24',
      '',
    ];
    for (const text of invalid) {
      assert.throws(
        () => parseIpPrefix(text),
        (error: unknown) => {
          assert.ok(error instanceof Error);
          assert.match(error.message, /invalid IP prefix/);
          assert.ok(error.message.includes(`"${text}"`), `message should quote the input: ${error.message}`);
          return true;
        },
      );
      assert.equal(isIpPrefix(text), false, text);
    }
  });

  test('hands every caller of the same text the same prefix, which nobody can change', () => {
    const first = parseIpPrefix('fd42::1234/64');
    const again = parseIpPrefix('fd42::1234/64');
    assert.equal(again, first);
    assert.throws(() => {
      (first as { length: number }).length = 1;
    }, TypeError);
    assert.equal(canonical('fd42::1234/64'), 'fd42::/64');
  });
});

describe('formatting IPv6 the RFC 5952 way', () => {
  test('lowercases and drops leading zeros', () => {
    assert.equal(canonicalAddress('2001:0DB8:00AB:0000:0000:0000:0000:0001'), '2001:db8:ab::1');
  });

  test('compresses the longest run of zero groups, the leftmost one on a tie', () => {
    assert.equal(canonicalAddress('2001:db8:0:0:1:0:0:1'), '2001:db8::1:0:0:1');
    assert.equal(canonicalAddress('2001:0:0:1:0:0:0:1'), '2001:0:0:1::1');
    assert.equal(canonicalAddress('0:0:0:0:0:0:0:0'), '::');
    assert.equal(canonicalAddress('0:0:0:0:0:0:0:1'), '::1');
    assert.equal(canonicalAddress('fd00:0:0:0:0:0:0:0'), 'fd00::');
  });

  test('never shortens a single zero group', () => {
    assert.equal(canonicalAddress('2001:db8:0:1:1:1:1:1'), '2001:db8:0:1:1:1:1:1');
    assert.equal(canonicalAddress('1:2:3:4:5:6:7::'), '1:2:3:4:5:6:7:0');
  });

  test('writes IPv4-mapped addresses with a dotted IPv4 tail', () => {
    assert.equal(canonicalAddress('::ffff:c000:0201'), '::ffff:192.0.2.1');
    assert.equal(canonicalAddress('::FFFF:192.0.2.1'), '::ffff:192.0.2.1');
  });

  test('reads an embedded dotted IPv4 tail', () => {
    assert.equal(canonicalAddress('64:ff9b::192.0.2.1'), '64:ff9b::c000:201');
  });
});

describe('single addresses', () => {
  test('recognises IPv4 and IPv6 but not prefixes, zones or host names', () => {
    assert.equal(isIpAddress('192.0.2.1'), true);
    assert.equal(isIpAddress('2620:fe::fe'), true);
    assert.equal(isIpAddress('10.0.0.0/8'), false);
    assert.equal(isIpAddress('fe80::1%eth0'), false);
    assert.equal(isIpAddress('vpn.example'), false);
    assert.equal(isIpAddress('[::1]'), false);
    assert.throws(() => parseIpAddress('vpn.example'), /invalid IP address "vpn\.example"/);
  });

  test('tells the family of exactly the addresses it parses', () => {
    for (const text of [
      '192.0.2.1',
      '2620:fe::fe',
      '::ffff:192.0.2.1',
      '10.0.0.0/8',
      'fe80::1%eth0',
      'vpn.example',
      '[::1]',
      '',
    ]) {
      const family = ipAddressFamily(text);
      if (family === null) assert.throws(() => parseIpAddress(text), `${text} is refused by both`);
      else assert.equal(parseIpAddress(text).family, family, text);
    }
    assert.equal(ipAddressFamily('2620:fe::fe'), 6);
    assert.equal(ipAddressFamily('192.0.2.1'), 4);
  });
});

describe('containment', () => {
  test('a prefix contains itself and its sub-prefixes, never the other family', () => {
    const wide = parseIpPrefix('10.0.0.0/8');
    assert.equal(prefixContains(wide, wide), true);
    assert.equal(prefixContains(wide, parseIpPrefix('10.42.0.0/16')), true);
    assert.equal(prefixContains(parseIpPrefix('10.42.0.0/16'), wide), false);
    assert.equal(prefixContains(parseIpPrefix('0.0.0.0/0'), parseIpPrefix('::/128')), false);
    assert.equal(prefixContains(parseIpPrefix('::/0'), parseIpPrefix('fd00::/8')), true);
  });

  test('checks single addresses against a prefix', () => {
    const range = parseIpPrefix('10.44.44.0/29');
    assert.equal(prefixContainsAddress(range, parseIpAddress('10.44.44.7')), true);
    assert.equal(prefixContainsAddress(range, parseIpAddress('10.44.44.8')), false);
  });

  test('two prefixes overlap exactly when one contains the other', () => {
    assert.equal(prefixesOverlap(parseIpPrefix('10.0.0.0/8'), parseIpPrefix('10.1.0.0/16')), true);
    assert.equal(prefixesOverlap(parseIpPrefix('10.1.0.0/16'), parseIpPrefix('10.0.0.0/8')), true);
    assert.equal(prefixesOverlap(parseIpPrefix('10.0.0.0/9'), parseIpPrefix('10.128.0.0/9')), false);
  });
});

describe('splitting', () => {
  test('halves a prefix into its low and high half', () => {
    assert.deepEqual(halvePrefix(parseIpPrefix('0.0.0.0/0')).map(formatIpPrefix), ['0.0.0.0/1', '128.0.0.0/1']);
    assert.deepEqual(halvePrefix(parseIpPrefix('fd00::/127')).map(formatIpPrefix), ['fd00::/128', 'fd00::1/128']);
  });

  test('cannot halve a single address', () => {
    assert.throws(() => halvePrefix(parseIpPrefix('192.0.2.1/32')), /single address/);
    assert.throws(() => halvePrefix(parseIpPrefix('::1/128')), /single address/);
  });

  test('splits into a power-of-two number of equal networks, IPv4 and IPv6', () => {
    assert.deepEqual(splitPrefix(parseIpPrefix('10.0.0.0/24'), 4).map(formatIpPrefix), [
      '10.0.0.0/26',
      '10.0.0.64/26',
      '10.0.0.128/26',
      '10.0.0.192/26',
    ]);
    assert.deepEqual(splitPrefix(parseIpPrefix('fd00::/64'), 2).map(formatIpPrefix), [
      'fd00::/65',
      'fd00::8000:0:0:0/65',
    ]);
    assert.deepEqual(splitPrefix(parseIpPrefix('fd00::/110'), 4).map(formatIpPrefix), [
      'fd00::/112',
      'fd00::1:0/112',
      'fd00::2:0/112',
      'fd00::3:0/112',
    ]);
    assert.deepEqual(splitPrefix(parseIpPrefix('10.0.0.0/24'), 1).map(formatIpPrefix), ['10.0.0.0/24']);
  });

  test('refuses counts that are not powers of two or do not fit', () => {
    assert.throws(() => splitPrefix(parseIpPrefix('10.0.0.0/24'), 3), /power of two/);
    assert.throws(() => splitPrefix(parseIpPrefix('10.0.0.0/24'), 0), /power of two/);
    assert.throws(() => splitPrefix(parseIpPrefix('10.0.0.0/31'), 4), /too small/);
  });
});

describe('addresses inside a prefix', () => {
  test('counts the addresses of a prefix', () => {
    assert.equal(prefixSize(parseIpPrefix('10.44.44.0/29')), 8n);
    assert.equal(prefixSize(parseIpPrefix('fd44::/64')), 1n << 64n);
    assert.equal(prefixSize(parseIpPrefix('::/0')), 1n << 128n);
  });

  test('finds the address at network + offset, and refuses offsets outside', () => {
    const range = parseIpPrefix('10.44.44.0/29');
    assert.equal(formatIpAddress(addressAt(range, 1)), '10.44.44.1');
    assert.equal(formatIpAddress(addressAt(range, 7n)), '10.44.44.7');
    assert.throws(() => addressAt(range, 8), /outside 10\.44\.44\.0\/29/);
    assert.throws(() => addressAt(range, -1), /outside/);
    assert.equal(formatIpAddress(addressAt(parseIpPrefix('fd44::/64'), 2)), 'fd44::2');
  });
});
