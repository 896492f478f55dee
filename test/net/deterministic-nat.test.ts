// The deterministic NAT mapping is what turns "public address, port, time" into a client: the
// agent programs it and the portal reads it backwards, so it must be a function of the settings
// alone, give every client ports of its own, and map every one of those ports back to it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DEFAULT_PORTS_PER_CLIENT,
  DeterministicNat,
  FIRST_NAT_PORT,
  NatSettingsError,
  type NatBlock,
} from '../../src/net/deterministic-nat.js';

const twoProfiles = {
  ranges: ['10.10.0.1/24', 'fd10::1/64', '10.20.0.0/25'],
  publicAddresses: Array.from({ length: 9 }, (_, index) => `192.0.2.${10 + index}`),
  portsPerClient: 1500,
};

test('every client of the ranges gets a block of its own: no two clients share a port of a public address', () => {
  const nat = new DeterministicNat(twoProfiles);
  assert.equal(nat.clients, 253 + 125, 'hosts of a /24 and a /25, without network, gateway and broadcast');
  assert.equal(nat.blocksPerAddress, 43);
  const byAddress = new Map<string, NatBlock[]>();
  const clients = new Set<string>();
  for (const block of nat.blocks()) {
    assert.ok(block.firstPort >= FIRST_NAT_PORT && block.lastPort <= 65535);
    assert.equal(block.lastPort - block.firstPort + 1, 1500);
    clients.add(block.clientAddress);
    byAddress.set(block.publicAddress, [...(byAddress.get(block.publicAddress) ?? []), block]);
  }
  assert.equal(clients.size, nat.clients, 'each client once');
  for (const [address, blocks] of byAddress) {
    const sorted = [...blocks].sort((a, b) => a.firstPort - b.firstPort);
    for (let index = 1; index < sorted.length; index++)
      assert.ok(
        (sorted[index] as NatBlock).firstPort > (sorted[index - 1] as NatBlock).lastPort,
        `${address}: blocks overlap`,
      );
  }
  assert.equal(nat.blockOf('10.10.0.1'), null, 'the gateway is no client');
  assert.equal(nat.blockOf('10.10.0.255'), null, 'nor is broadcast');
  assert.equal(nat.blockOf('fd10::2'), null, 'IPv6 is routed, not translated');
  assert.deepEqual(nat.blockOf('10.10.0.2'), {
    clientAddress: '10.10.0.2',
    publicAddress: '192.0.2.10',
    firstPort: 1024,
    lastPort: 2523,
  });
});

test('every port of every block maps back to its one client, and no other port maps to anyone', () => {
  const nat = new DeterministicNat({
    ranges: ['10.30.0.0/27'],
    publicAddresses: ['198.51.100.7'],
    portsPerClient: 2000,
  });
  const owners = new Map<number, string>();
  for (const block of nat.blocks())
    for (let port = block.firstPort; port <= block.lastPort; port++) {
      assert.equal(nat.clientOf('198.51.100.7', port), block.clientAddress, `port ${port}`);
      owners.set(port, block.clientAddress);
    }
  for (let port = 0; port <= 65535; port++)
    if (!owners.has(port)) assert.equal(nat.clientOf('198.51.100.7', port), null, `port ${port} is no one's`);
  assert.equal(nat.clientOf('198.51.100.8', 5000), null, 'another address');
  assert.equal(nat.clientOf('not an address', 5000), null);
  assert.equal(nat.clientOf('198.51.100.7', 1023), null, 'below 1024');
});

test('the mapping depends on the settings only, not on the order of ranges or addresses, nor on how a range is written', () => {
  const shuffled = new DeterministicNat({
    ranges: ['10.20.0.0/25', 'fd10::1/64', '10.10.0.77/24', '10.20.0.0/25'],
    publicAddresses: [...twoProfiles.publicAddresses].reverse(),
    portsPerClient: 1500,
  });
  const original = new DeterministicNat(twoProfiles);
  assert.deepEqual(shuffled.settings, original.settings);
  assert.deepEqual([...shuffled.blocks()], [...original.blocks()]);
  assert.deepEqual(original.settings.ranges, ['10.10.0.0/24', '10.20.0.0/25']);
});

test('settings that do not fit, overlap or are out of bounds are refused, naming the numbers', () => {
  assert.throws(
    () => new DeterministicNat({ ranges: ['10.0.0.0/16'], publicAddresses: ['192.0.2.1'], portsPerClient: 64 }),
    (error: unknown) =>
      error instanceof NatSettingsError &&
      /65533 client addresses need 66 public addresses at 64 ports each \(1008 clients per address\), but 1 is given/.test(
        error.message,
      ),
  );
  assert.throws(
    () => new DeterministicNat({ ranges: ['10.0.0.0/24'], publicAddresses: ['192.0.2.1'], portsPerClient: 63 }),
    /portsPerClient must be a whole number from 64 to 64512, not 63/,
  );
  assert.throws(
    () =>
      new DeterministicNat({
        ranges: ['10.0.0.0/16', '10.0.3.0/24'],
        publicAddresses: ['192.0.2.1'],
        portsPerClient: 64,
      }),
    /10\.0\.0\.0\/16 and 10\.0\.3\.0\/24 overlap/,
  );
  assert.throws(
    () => new DeterministicNat({ ranges: ['10.0.0.0/24'], publicAddresses: [], portsPerClient: 64 }),
    /at least one/,
  );
  assert.throws(
    () => new DeterministicNat({ ranges: ['10.0.0.0/24'], publicAddresses: ['2001:db8::1'], portsPerClient: 64 }),
    /not IPv4/,
  );
});

test('a /16 of 65,533 clients fits 66 addresses at 64 ports each, and its last client maps both ways', () => {
  const addresses = Array.from({ length: 66 }, (_, index) => `203.0.113.${index + 1}`);
  const nat = new DeterministicNat({ ranges: ['10.0.0.0/16'], publicAddresses: addresses, portsPerClient: 64 });
  const last = nat.blockOf('10.0.255.254');
  assert.ok(last !== null);
  assert.equal(nat.clientOf(last.publicAddress, last.lastPort), '10.0.255.254');
  assert.equal(DEFAULT_PORTS_PER_CLIENT, 2000);
});
