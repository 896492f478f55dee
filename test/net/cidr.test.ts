// The short way to a network's canonical CIDR text (single addresses, without bigint) gives the
// same answer as the long way for every kind of input, valid or not.
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { describe, test } from 'node:test';
import { canonicalNetworkCidr, isNetworkCidr, parseCidr } from '../../src/net/cidr.js';

/** The long way: parse with bigint, then check that no host bit is set. */
function longWay(text: string): string | null {
  const cidr = parseCidr(text);
  return cidr !== null && isNetworkCidr(cidr) ? cidr.text : null;
}

function randomGroup(): string {
  // Zero often, so runs of zero groups (and "::") are common.
  return randomInt(3) === 0 ? '0' : randomInt(0x10000).toString(16);
}

/** An IPv6 address written in one of the many ways isIPv6 accepts. */
function randomIPv6Text(): string {
  const groups = Array.from({ length: 8 }, randomGroup);
  switch (randomInt(5)) {
    case 0:
      return groups.join(':');
    case 1:
      // Leading zeros and capitals, both allowed on input.
      return groups.map((group) => group.padStart(4, '0').toUpperCase()).join(':');
    case 2: {
      const start = randomInt(8);
      const end = start + randomInt(8 - start) + 1;
      return `${groups.slice(0, start).join(':')}::${groups.slice(end).join(':')}`;
    }
    case 3:
      return `::ffff:${randomInt(256)}.${randomInt(256)}.${randomInt(256)}.${randomInt(256)}`;
    default:
      return `${groups.slice(0, 6).join(':')}:${randomInt(256)}.${randomInt(256)}.${randomInt(256)}.${randomInt(256)}`;
  }
}

describe('the canonical text of a network in CIDR notation', () => {
  test('single addresses come back in canonical form', () => {
    assert.equal(canonicalNetworkCidr('198.19.7.2/32'), '198.19.7.2/32');
    assert.equal(canonicalNetworkCidr('FD00:0007:0000:0000:0000:0000:0000:0002/128'), 'fd00:7::2/128');
    assert.equal(canonicalNetworkCidr('2001:db8:0:0:1:0:0:1/128'), '2001:db8::1:0:0:1/128');
    assert.equal(canonicalNetworkCidr('2001:db8:0:1:1:1:1:1/128'), '2001:db8:0:1:1:1:1:1/128');
    assert.equal(canonicalNetworkCidr('::ffff:c000:0280/128'), '::ffff:192.0.2.128/128');
    assert.equal(canonicalNetworkCidr('::/128'), '::/128');
    assert.equal(canonicalNetworkCidr('fd00:7::10/124'), 'fd00:7::10/124');
  });

  test('anything but a network is refused: host bits, no length, bad lengths, zones, bad addresses', () => {
    for (const text of [
      '198.19.7.2/24',
      'fd00:7::10',
      '198.19.7.2',
      '198.19.7.300/32',
      '198.019.7.2/32',
      '198.19.7.2/032',
      '198.19.7.2/33',
      '198.19.7.2/32/32',
      '198.19.7.2/+32',
      ' 198.19.7.2/32',
      'fe80::1%eth0/128',
      'fd00:7::2/129',
      'fd00:7::2/0128',
      'fd00:7:::2/128',
      '1:2:3:4:5:6:7:8:9/128',
      '/32',
      '',
    ]) {
      assert.equal(canonicalNetworkCidr(text), null, text);
      assert.equal(longWay(text), null, `the long way agrees on ${text}`);
    }
  });

  test('the short way and the long way agree on 20,000 random addresses and lengths', () => {
    for (let index = 0; index < 20_000; index++) {
      const six = randomInt(2) === 0;
      const address = six
        ? randomIPv6Text()
        : `${randomInt(256)}.${randomInt(256)}.${randomInt(256)}.${randomInt(256)}`;
      // Mostly single addresses (the short way), some other lengths (the long way).
      const length = randomInt(4) === 0 ? randomInt(six ? 130 : 34) : six ? 128 : 32;
      const text = `${address}/${length}`;
      assert.equal(canonicalNetworkCidr(text), longWay(text), text);
    }
  });
});
