// The test subnets of two labs never meet, in one process or in two: each /30 is reserved on
// the machine while a lab holds it, and given back when the lab is cleaned up; one that an
// interface of the host still holds (a lab killed before its cleanup) is never handed out.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { hostHoldsSubnet, NetnsLab } from './netns.js';

const RESERVATIONS = path.join(tmpdir(), 'vpn-portal-test-subnets');

function indexOf(address: string): number {
  const [, , third = 0, fourth = 0] = address.split('.').map(Number);
  return (third * 256 + fourth) >> 2;
}

test('two labs hand out different subnets, each reserved on the machine until its lab is cleaned up', async () => {
  const first = new NetnsLab();
  const second = new NetnsLab();
  const firstSubnets = Array.from({ length: 300 }, () => indexOf(first.subnet().first));
  const secondSubnets = Array.from({ length: 300 }, () => indexOf(second.subnet().first));
  assert.equal(new Set([...firstSubnets, ...secondSubnets]).size, 600);
  const reserved = new Set(readdirSync(RESERVATIONS).map(Number));
  for (const index of [...firstSubnets, ...secondSubnets]) assert.ok(reserved.has(index), `subnet ${index} reserved`);

  await first.cleanup();
  for (const index of firstSubnets) assert.equal(existsSync(path.join(RESERVATIONS, String(index))), false);
  for (const index of secondSubnets) assert.equal(existsSync(path.join(RESERVATIONS, String(index))), true);
  await second.cleanup();
  for (const index of secondSubnets) assert.equal(existsSync(path.join(RESERVATIONS, String(index))), false);
});

test('a /30 that an interface of the host holds is seen as taken, and free again once the interface is gone', async () => {
  const lab = new NetnsLab();
  const subnet = lab.subnet();
  const index = indexOf(subnet.first);
  assert.equal(hostHoldsSubnet(index), false, 'reserved, but on no interface yet');
  // As a lab killed before its cleanup leaves it: a veth with the /30's address on the host.
  await lab.vethPair(
    { namespace: null, address: `${subnet.first}/30` },
    { namespace: null, address: `${subnet.second}/30` },
  );
  assert.equal(hostHoldsSubnet(index), true);
  await lab.cleanup();
  assert.equal(hostHoldsSubnet(index), false);
});
