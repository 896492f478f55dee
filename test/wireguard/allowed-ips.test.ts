import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { formatIpPrefix, parseIpPrefix } from '../../src/net/ip-prefix.js';
import { allowedIps, PrefixList } from '../../src/net/prefix-list.js';

const listOf = (list: PrefixList): string[] => list.sorted().map(formatIpPrefix);

describe('adding prefixes keeps the list free of redundancy', () => {
  test('normalises a prefix to its network address', () => {
    const list = new PrefixList();
    list.add(parseIpPrefix('192.168.1.77/24'));
    assert.deepEqual(listOf(list), ['192.168.1.0/24']);
  });

  test('ignores a prefix already covered, including an identical one', () => {
    const list = new PrefixList();
    list.add(parseIpPrefix('10.0.0.0/8'));
    list.add(parseIpPrefix('10.1.0.0/16'));
    list.add(parseIpPrefix('10.0.0.0/8'));
    assert.deepEqual(listOf(list), ['10.0.0.0/8']);
  });

  test('drops existing prefixes that a new, wider prefix covers', () => {
    const list = new PrefixList();
    list.add(parseIpPrefix('10.1.0.0/16'));
    list.add(parseIpPrefix('10.2.0.0/16'));
    list.add(parseIpPrefix('172.16.0.0/12'));
    list.add(parseIpPrefix('10.0.0.0/8'));
    assert.deepEqual(listOf(list), ['10.0.0.0/8', '172.16.0.0/12']);
  });

  test('never lets one family cover the other', () => {
    const list = new PrefixList();
    list.add(parseIpPrefix('0.0.0.0/0'));
    list.add(parseIpPrefix('::/0'));
    list.add(parseIpPrefix('::/96'));
    assert.deepEqual(listOf(list), ['0.0.0.0/0', '::/0']);
  });
});

describe('excluding a prefix leaves the minimal CIDR cover of the rest', () => {
  test('removes 192.168.5.0/24 from the whole IPv4 space', () => {
    const list = new PrefixList();
    list.add(parseIpPrefix('0.0.0.0/0'));
    list.exclude(parseIpPrefix('192.168.5.0/24'));
    assert.deepEqual(listOf(list), [
      '0.0.0.0/1',
      '128.0.0.0/2',
      '192.0.0.0/9',
      '192.128.0.0/11',
      '192.160.0.0/13',
      '192.168.0.0/22',
      '192.168.4.0/24',
      '192.168.6.0/23',
      '192.168.8.0/21',
      '192.168.16.0/20',
      '192.168.32.0/19',
      '192.168.64.0/18',
      '192.168.128.0/17',
      '192.169.0.0/16',
      '192.170.0.0/15',
      '192.172.0.0/14',
      '192.176.0.0/12',
      '192.192.0.0/10',
      '193.0.0.0/8',
      '194.0.0.0/7',
      '196.0.0.0/6',
      '200.0.0.0/5',
      '208.0.0.0/4',
      '224.0.0.0/3',
    ]);
  });

  test('drops a member that lies entirely inside the excluded prefix', () => {
    const list = new PrefixList();
    list.add(parseIpPrefix('10.1.0.0/16'));
    list.add(parseIpPrefix('172.16.0.0/12'));
    list.exclude(parseIpPrefix('10.0.0.0/8'));
    assert.deepEqual(listOf(list), ['172.16.0.0/12']);
  });

  test('leaves members alone that do not overlap, or are of the other family', () => {
    const list = new PrefixList();
    list.add(parseIpPrefix('10.0.0.0/8'));
    list.add(parseIpPrefix('::/0'));
    list.exclude(parseIpPrefix('172.16.0.0/12'));
    // ::/0 (network number 0) sorts before 10.0.0.0/8: families are not grouped.
    assert.deepEqual(listOf(list), ['::/0', '10.0.0.0/8']);
  });

  test('carves a single IPv6 address out of a /126', () => {
    const list = new PrefixList();
    list.add(parseIpPrefix('fd00::/126'));
    list.exclude(parseIpPrefix('fd00::2/128'));
    assert.deepEqual(listOf(list), ['fd00::/127', 'fd00::3/128']);
  });
});

describe('AllowedIPs of a WireGuard client (reference §6.3 examples)', () => {
  test('a full tunnel routes everything, the client networks disappear inside it', () => {
    assert.deepEqual(
      allowedIps({
        defaultGateway: true,
        routeList: [],
        excludeRouteList: [],
        clientPrefixes: ['10.44.44.0/29', 'fd44::/64'],
      }),
      ['0.0.0.0/0', '::/0'],
    );
  });

  test('a split tunnel lists routes and client networks with the excluded host carved out', () => {
    assert.deepEqual(
      allowedIps({
        defaultGateway: false,
        routeList: ['192.168.1.0/24', 'fd11::/64'],
        excludeRouteList: ['192.168.1.5/32'],
        clientPrefixes: ['10.42.42.2/24', 'fd42::/64'],
      }).join(','),
      '10.42.42.0/24,192.168.1.0/30,192.168.1.4/32,192.168.1.6/31,192.168.1.8/29,192.168.1.16/28,' +
        '192.168.1.32/27,192.168.1.64/26,192.168.1.128/25,fd11::/64,fd42::/64',
    );
  });

  test('sorts by raw number, so a low IPv6 prefix lands among the IPv4 ones', () => {
    // Excluding the upper half of IPv6 and a quarter of IPv4 leaves ::/1 and 0.0.0.0/1,
    // both with network 0: prefix lengths tie, so IPv4 goes first, and ::/1 still comes
    // before 128.0.0.0/2 whose network number is larger.
    assert.deepEqual(
      allowedIps({
        defaultGateway: true,
        routeList: [],
        excludeRouteList: ['192.0.0.0/2', '8000::/1'],
        clientPrefixes: ['10.44.44.0/29', 'fd44::/64'],
      }),
      ['0.0.0.0/1', '::/1', '128.0.0.0/2'],
    );
  });

  test('excludes also apply to the client networks themselves', () => {
    assert.deepEqual(
      allowedIps({
        defaultGateway: false,
        routeList: [],
        excludeRouteList: ['fd42::/64'],
        clientPrefixes: ['10.42.42.0/24', 'fd42::/64'],
      }),
      ['10.42.42.0/24'],
    );
  });

  test('nothing routed means an empty list', () => {
    assert.deepEqual(
      allowedIps({
        defaultGateway: false,
        routeList: [],
        excludeRouteList: ['0.0.0.0/0', '::/0'],
        clientPrefixes: ['10.0.0.0/24', 'fd00::/64'],
      }),
      [],
    );
  });

  test('rejects invalid CIDR text instead of guessing', () => {
    assert.throws(
      () => allowedIps({ defaultGateway: false, routeList: ['192.168.1.0'], excludeRouteList: [], clientPrefixes: [] }),
      /invalid IP prefix "192\.168\.1\.0"/,
    );
  });
});
