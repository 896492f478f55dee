import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, diffieHellman } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';

import { asWireGuardKey } from '../../src/shared/ids.js';
import {
  generateWireGuardKeyPair,
  isCanonicalWireGuardKey,
  isWireGuardKey,
  wireGuardPublicKey,
} from '../../src/wireguard/keys.js';
import { ABOVE_FIELD_PRIME_KEY, bit255Twin } from '../support/device-keys.js';
import { TSX } from '../support/logged-process.js';

const WG = '/usr/bin/wg';

/** Runs the real `wg` tool; a missing tool is a test failure, never a skip. */
function wg(args: string[], input?: string): string {
  assert.ok(existsSync(WG), `${WG} is required for this test (install wireguard-tools)`);
  const result = spawnSync(WG, args, { input, encoding: 'utf8' });
  assert.equal(result.status, 0, `wg ${args.join(' ')} failed: ${result.stderr}`);
  return result.stdout.trim();
}

describe('WireGuard public keys agree with the real wg tool', () => {
  test('derives the same public key as `wg pubkey` for keys made by `wg genkey`', () => {
    for (let round = 0; round < 5; round += 1) {
      const privateKey = wg(['genkey']);
      assert.equal(wireGuardPublicKey(asWireGuardKey(privateKey)), wg(['pubkey'], privateKey));
    }
  });

  test('generates key pairs whose public half is what `wg pubkey` prints', () => {
    for (let round = 0; round < 5; round += 1) {
      const { privateKey, publicKey } = generateWireGuardKeyPair();
      assert.ok(isWireGuardKey(privateKey));
      assert.ok(isWireGuardKey(publicKey));
      assert.equal(publicKey, wg(['pubkey'], privateKey));
      assert.equal(wireGuardPublicKey(privateKey), publicKey);
    }
  });

  test('makes a hundred thousand key pairs in a row without ever stopping', () => {
    // In a process of its own, which a deadlock cannot take the test runner down with: exporting
    // a key that generateKeyPairSync made deadlocks Node 20 within a few tens of thousands of keys.
    const keys = fileURLToPath(new URL('../../src/wireguard/keys.ts', import.meta.url));
    const script = `import { generateWireGuardKeyPair } from ${JSON.stringify(keys)};
      for (let made = 0; made < 100000; made++) generateWireGuardKeyPair();
      console.log('made');`;
    const result = spawnSync(process.execPath, ['--import', TSX, '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(result.signal, null, 'the process had to be stopped: it hung');
    assert.equal(result.stdout.trim(), 'made', result.stderr);
  });

  test('matches the X25519 test vector of RFC 7748 §6.1', () => {
    const alicePrivate = Buffer.from(
      '77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a',
      'hex',
    ).toString('base64');
    const alicePublic = Buffer.from('8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a', 'hex').toString(
      'base64',
    );
    assert.equal(wireGuardPublicKey(asWireGuardKey(alicePrivate)), alicePublic);
  });

  test('refuses to derive from text that is not a key', () => {
    assert.throws(() => wireGuardPublicKey(asWireGuardKey('not a key')), /invalid WireGuard private key/);
  });
});

describe('the WireGuard key validator is strict', () => {
  const real = wg(['pubkey'], wg(['genkey']));
  const body = real.slice(0, 42);

  test('accepts real keys and every legal 43rd character', () => {
    assert.equal(isWireGuardKey(real), true);
    for (const last of 'AEIMQUYcgkosw048') {
      assert.equal(isWireGuardKey(`${body}${last}=`), true, last);
    }
  });

  test('rejects the pipe that the upstream pattern lets through at position 43', () => {
    assert.equal(isWireGuardKey(`${body}|=`), false);
  });

  test('rejects a trailing newline that the upstream pattern lets through', () => {
    assert.equal(isWireGuardKey(`${real}\n`), false);
    assert.equal(isWireGuardKey(`${real}\r\n`), false);
  });

  test('rejects wrong lengths, a 43rd character with low bits set, and non-Base64 text', () => {
    const rejected = [
      real.slice(0, 43), // no padding
      real.slice(1), // 43 characters
      `A${real}`, // 45 characters
      `${body}B=`, // B encodes bits a 32-byte value cannot have
      `${body}A==`,
      `${'-'.repeat(42)}A=`, // Base64url alphabet
      `${'_'.repeat(42)}A=`,
      ` ${real}`,
      '',
    ];
    for (const text of rejected) assert.equal(isWireGuardKey(text), false, JSON.stringify(text));
    assert.equal(isWireGuardKey(undefined), false);
    assert.equal(isWireGuardKey(42), false);
  });
});

test('a key is canonical only with bit 255 clear and a value below 2^255 − 19, read little-endian', () => {
  const { publicKey } = generateWireGuardKeyPair();
  assert.equal(isCanonicalWireGuardKey(publicKey), true);
  assert.equal(isCanonicalWireGuardKey(bit255Twin(publicKey)), false, 'bit 255 set');
  assert.equal(isCanonicalWireGuardKey(ABOVE_FIELD_PRIME_KEY), false, '2^255 − 10');
  const largest = Buffer.concat([Buffer.from([0xec]), Buffer.alloc(30, 0xff), Buffer.from([0x7f])]).toString('base64');
  assert.equal(isCanonicalWireGuardKey(largest), true, '2^255 − 20, the largest canonical value');
  const prime = Buffer.concat([Buffer.from([0xed]), Buffer.alloc(30, 0xff), Buffer.from([0x7f])]).toString('base64');
  assert.equal(isCanonicalWireGuardKey(prime), false, '2^255 − 19 itself');
  const belowByAMiddleByte = Buffer.concat([
    Buffer.from([0xff, 0xfe]),
    Buffer.alloc(29, 0xff),
    Buffer.from([0x7f]),
  ]).toString('base64');
  assert.equal(isCanonicalWireGuardKey(belowByAMiddleByte), true, 'a lower middle byte, the lowest byte above 0xed');
  assert.equal(isCanonicalWireGuardKey('not a key'), false);
  // The twin is the same point: X25519 with it gives the same shared secret (why it must be refused).
  const probe = generateWireGuardKeyPair();
  const sharedSecret = (key: string) => {
    const privateKey = createPrivateKey({
      key: { kty: 'OKP', crv: 'X25519', d: Buffer.from(probe.privateKey, 'base64').toString('base64url'), x: '' },
      format: 'jwk',
    });
    const der = Buffer.concat([Buffer.from('302a300506032b656e032100', 'hex'), Buffer.from(key, 'base64')]);
    return diffieHellman({
      privateKey,
      publicKey: createPublicKey({ key: der, format: 'der', type: 'spki' }),
    }).toString('hex');
  };
  assert.equal(sharedSecret(bit255Twin(publicKey)), sharedSecret(publicKey));
});
