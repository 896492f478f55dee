// The text of an admin key (prefix, id, 256-bit secret, CRC-32 checksum) and its keyed hash;
// and the sealing of answers kept for retries.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import {
  ADMIN_KEY_PATTERN,
  hashAdminKey,
  newAdminKeyToken,
  parseAdminKeyToken,
} from '../../src/keys/admin-key-token.js';
import { AnswerCipher } from '../../src/keys/answer-cipher.js';

test('a new admin key is vpa_, a 12-character id, 43 secret characters and a 6-character checksum, and parses back to its id', () => {
  const seen = new Set<string>();
  for (let index = 0; index < 200; index++) {
    const { keyId, token } = newAdminKeyToken();
    assert.match(token, ADMIN_KEY_PATTERN);
    assert.equal(token.length, 4 + 12 + 1 + 43 + 6);
    assert.deepEqual(parseAdminKeyToken(token), { kind: 'admin-key', keyId });
    seen.add(token);
  }
  assert.equal(seen.size, 200, 'no two alike');
});

test('the checksum catches every changed, dropped or swapped character; other tokens are not admin keys', () => {
  const { token } = newAdminKeyToken();
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  for (let position = 4; position < token.length; position++) {
    if (token[position] === '_') continue;
    const replacement = alphabet[(alphabet.indexOf(token[position] ?? '0') + 1) % 62] ?? '0';
    const changed = `${token.slice(0, position)}${replacement}${token.slice(position + 1)}`;
    assert.deepEqual(parseAdminKeyToken(changed), { kind: 'bad-checksum' }, `character ${position} changed`);
  }
  assert.deepEqual(parseAdminKeyToken(token.slice(0, -1)), { kind: 'bad-checksum' });
  const swapped = `${token.slice(0, 20)}${token[21]}${token[20]}${token.slice(22)}`;
  if (swapped !== token) assert.deepEqual(parseAdminKeyToken(swapped), { kind: 'bad-checksum' });
  assert.deepEqual(
    parseAdminKeyToken('0123456789abcdef'.repeat(4)),
    { kind: 'not-an-admin-key' },
    'the specification secret',
  );
});

test('the stored hash depends on the pepper, so a database alone does not verify a key', () => {
  const { token } = newAdminKeyToken();
  const pepper = randomBytes(32);
  assert.match(hashAdminKey(pepper, token), /^[0-9a-f]{64}$/);
  assert.equal(hashAdminKey(pepper, token), hashAdminKey(Buffer.from(pepper), token));
  assert.notEqual(hashAdminKey(randomBytes(32), token), hashAdminKey(pepper, token));
});

test('a sealed answer opens only with its key and its context, and never shows its text', () => {
  const key = randomBytes(32);
  const cipher = new AnswerCipher(key);
  const sealed = cipher.seal('PrivateKey = secret', 'mdm\nk1');
  assert.equal(sealed.includes('secret'), false);
  assert.equal(cipher.open(sealed, 'mdm\nk1'), 'PrivateKey = secret');
  assert.equal(cipher.open(sealed, 'mdm\nk2'), null, 'moved to another record');
  assert.equal(new AnswerCipher(randomBytes(32)).open(sealed, 'mdm\nk1'), null, 'another instance key');
  assert.equal(cipher.open(`${sealed.slice(0, -4)}AAAA`, 'mdm\nk1'), null, 'altered');
  assert.notEqual(cipher.seal('same', 'c'), cipher.seal('same', 'c'), 'a new nonce each time');
});
