// The add_peer form's parser: its quick path for valid forms must take exactly what the schema
// takes, with the same values, and leave everything else to the schema's messages.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { parseAddPeerForm } from '../../src/protocol/vpn-daemon.js';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';
import { bit255Twin } from '../support/device-keys.js';

const key = generateWireGuardKeyPair().publicKey;

function form(fields: readonly (readonly [string, string])[]): URLSearchParams {
  return new URLSearchParams(fields.map(([name, value]): [string, string] => [name, value]));
}

test('a valid add_peer form gives the key, the networks in canonical form and the revision, or null without one', () => {
  assert.deepEqual(
    parseAddPeerForm(
      form([
        ['public_key', key],
        ['ip_net', '10.0.0.2/32'],
        ['ip_net', 'FD00:0::2/128'],
        ['revision', '42'],
      ]),
    ),
    { ok: true, value: { publicKey: key, allowedIps: ['10.0.0.2/32', 'fd00::2/128'], revision: 42 } },
  );
  assert.deepEqual(
    parseAddPeerForm(
      form([
        ['public_key', key],
        ['ip_net', '10.0.0.0/24'],
        ['revision', '0'],
      ]),
    ),
    {
      ok: true,
      value: { publicKey: key, allowedIps: ['10.0.0.0/24'], revision: 0 },
    },
  );
  assert.deepEqual(
    parseAddPeerForm(
      form([
        ['public_key', key],
        ['ip_net', '10.0.0.2/32'],
      ]),
    ),
    {
      ok: true,
      value: { publicKey: key, allowedIps: ['10.0.0.2/32'], revision: null },
    },
  );
  const sixteen = Array.from({ length: 16 }, (_, index) => ['ip_net', `10.0.${index}.2/32`] as const);
  const parsed = parseAddPeerForm(form([['public_key', key], ...sixteen, ['revision', '999999999999999']]));
  assert.equal(parsed.ok && parsed.value.allowedIps.length, 16);
  assert.equal(parsed.ok && parsed.value.revision, 999_999_999_999_999);
});

test('every invalid add_peer form is refused with a message naming its field', () => {
  const net = ['ip_net', '10.0.0.2/32'] as const;
  const refused: [string, readonly (readonly [string, string])[]][] = [
    ['public_key', [net]],
    ['public_key', [['public_key', key], ['public_key', key], net]],
    ['public_key', [['public_key', 'not a key'], net]],
    ['public_key', [['public_key', bit255Twin(key)], net]],
    ['ip_net', [['public_key', key]]],
    [
      'ip_net',
      [
        ['public_key', key],
        ['ip_net', '10.0.0.2/24'],
      ],
    ],
    [
      'ip_net',
      [
        ['public_key', key],
        ['ip_net', '10.0.0.300/32'],
      ],
    ],
    ['ip_net', [['public_key', key], ...Array.from({ length: 17 }, () => net)]],
    ['revision', [['public_key', key], net, ['revision', '-1']]],
    ['revision', [['public_key', key], net, ['revision', '1.5']]],
    ['revision', [['public_key', key], net, ['revision', '1000000000000000']]],
    ['revision', [['public_key', key], net, ['revision', '']]],
    ['revision', [['public_key', key], net, ['revision', '1'], ['revision', '2']]],
  ];
  for (const [field, fields] of refused) {
    const parsed = parseAddPeerForm(form(fields));
    assert.equal(parsed.ok, false, JSON.stringify(fields));
    assert.match(parsed.ok ? '' : parsed.error, new RegExp(`^${field}: `), JSON.stringify(fields));
  }
});
