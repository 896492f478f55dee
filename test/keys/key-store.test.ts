// Key files brought from another server (an eduVPN one): written as private files when missing,
// kept when the same key is there, and never overwritten by another key. A secret replaced in its
// file by hand holds from the next reading of the file on (a second later, measured on the
// monotonic clock), and the old one no longer does. A key file appears whole or not at all.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { KeyFileDiffers, KeyStore, keyFileState } from '../../src/keys/key-store.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';
import { mountTmpfs } from '../support/tmpfs.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'key-store-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function freshStore(): KeyStore {
  return new KeyStore(path.join(mkdtempSync(path.join(scratch, 'data-')), 'keys'));
}

test('a secret brought from elsewhere is written as a private file in a private folder', () => {
  const keys = freshStore();
  const secret = 'ab'.repeat(32);
  assert.deepEqual(keys.adoptAdminApiKey(`${secret}\n`), { path: keys.adminApiKeyPath, created: true });
  assert.equal(readFileSync(keys.adminApiKeyPath, 'utf8'), secret);
  assert.equal(statSync(keys.adminApiKeyPath).mode & 0o777, 0o600);
  assert.equal(statSync(keys.keyDir).mode & 0o777, 0o700);
  assert.equal(keys.adminApiKeyMatches(secret), true);
});

test('a secret replaced in its file holds once the file is read again a second later, though the wall clock was set hours back, and the old one no longer does', async (t) => {
  const keys = freshStore();
  const [old, replacement] = ['ab'.repeat(32), 'cd'.repeat(32)];
  keys.adoptAdminApiKey(old);
  keys.adoptNodeKey(asNodeNumber(0), old);
  assert.equal(keys.adminApiKeyMatches(old), true);
  assert.equal(keys.nodeKeyMatches(asNodeNumber(0), old), true);
  assert.equal(keys.adminApiKeyMatches(replacement), false);

  writeFileSync(keys.adminApiKeyPath, `${replacement}\n`);
  writeFileSync(keys.nodeKeyPath(asNodeNumber(0)), replacement);
  // The wall clock set 3 hours back (Date.now(), a test double): the second is counted all the same.
  const wallNow = Date.now.bind(Date);
  t.mock.method(Date, 'now', () => wallNow() - 3 * 60 * 60 * 1000);
  await sleep(1_050);
  assert.equal(keys.adminApiKeyMatches(replacement), true);
  assert.equal(keys.adminApiKeyMatches(old), false);
  assert.equal(keys.nodeKeyMatches(asNodeNumber(0), replacement), true);
  assert.equal(keys.nodeKeyMatches(asNodeNumber(0), old), false);
  assert.equal(keys.nodeKeyMatches(asNodeNumber(1), replacement), false, 'a node without a key file matches nothing');
});

test('the same key already there is kept, and another key there is never overwritten', () => {
  const keys = freshStore();
  const node = asNodeNumber(2);
  const secret = 'cd'.repeat(32);
  keys.adoptNodeKey(node, secret);
  assert.deepEqual(keys.adoptNodeKey(node, `${secret}\n`), { path: keys.nodeKeyPath(node), created: false });
  assert.throws(() => keys.adoptNodeKey(node, 'ef'.repeat(32)), KeyFileDiffers);
  assert.equal(readFileSync(keys.nodeKeyPath(node), 'utf8'), secret);
});

test("a node's WireGuard private key is taken over, so its public key stays the one issued files name", () => {
  const keys = freshStore();
  const node = asNodeNumber(0);
  const pair = generateWireGuardKeyPair();
  keys.adoptWireGuardKey(node, pair.privateKey);
  assert.equal(keys.wireGuardPublicKey(node), pair.publicKey);
  assert.throws(() => keys.adoptWireGuardKey(node, generateWireGuardKeyPair().privateKey), KeyFileDiffers);
});

test('a key file is compared with content as missing, the same (whitespace aside) or different', () => {
  const file = path.join(scratch, 'compared.key');
  assert.equal(keyFileState(file, 'abc'), 'missing');
  writeFileSync(file, 'abc\n');
  assert.equal(keyFileState(file, 'abc'), 'same');
  assert.equal(keyFileState(file, 'abd'), 'differs');
});

test('asking for the secrets of many nodes without key files keeps nothing for them', () => {
  const store = freshStore();
  store.createNodeKey(asNodeNumber(0));
  assert.equal(store.nodeKeyMatches(asNodeNumber(0), 'guess'), false);
  const before = store.cachedFileCount;
  for (let nodeNumber = 1; nodeNumber <= 1_000; nodeNumber++) {
    assert.equal(store.nodeKeyMatches(asNodeNumber(nodeNumber), 'guess'), false);
  }
  assert.equal(store.cachedFileCount, before, 'a missing key file leaves no cache entry');
  // A key file made later holds at once: a missing one was not remembered as missing.
  const created = store.createNodeKey(asNodeNumber(7));
  const secret = readFileSync(created.path, 'utf8');
  assert.equal(store.nodeKeyMatches(asNodeNumber(7), secret), true);
});

test('a key made on a full disk fails and leaves no empty key file behind; once there is room it is made whole', (t) => {
  const disk = mountTmpfs(64 * 1024);
  t.after(() => disk.unmount());
  const keys = new KeyStore(path.join(disk.dir, 'keys'));
  keys.createNodeKey(asNodeNumber(0));
  disk.fill();

  assert.throws(() => keys.createWireGuardKey(asNodeNumber(1)), { code: 'ENOSPC' });
  assert.deepEqual(
    readdirSync(keys.keyDir),
    [path.basename(keys.nodeKeyPath(asNodeNumber(0)))],
    'no file of the key that failed, whole or temporary',
  );
  assert.equal(keys.wireGuardPrivateKey(asNodeNumber(1)), null);

  disk.free();
  assert.deepEqual(keys.createWireGuardKey(asNodeNumber(1)), {
    path: keys.wireGuardKeyPath(asNodeNumber(1)),
    created: true,
  });
  assert.notEqual(keys.wireGuardPrivateKey(asNodeNumber(1)), null, 'the key is whole');
});
