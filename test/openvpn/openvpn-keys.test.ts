// The OpenVPN CA and tls-crypt keys brought from another server (an eduVPN one): taken over so
// that the client files it issued keep working, never replacing a CA or key that is already here.
// A key replaced in its file by hand is used from a second later on, whatever the wall clock says.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { KeyFileDiffers } from '../../src/keys/key-store.js';
import { CertificateAuthority } from '../../src/openvpn/certificate-authority.js';
import { OpenVpnKeys } from '../../src/openvpn/openvpn-keys.js';
import { generateTlsCryptKey } from '../../src/openvpn/tls-crypt.js';

const scratch = mkdtempSync(path.join(tmpdir(), 'openvpn-keys-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const NOW = new Date();
const LATER = new Date(NOW.getTime() + 365 * 86_400_000);

function freshKeys(): OpenVpnKeys {
  return new OpenVpnKeys(path.join(mkdtempSync(path.join(scratch, 'data-')), 'keys'));
}

test('a CA brought from elsewhere becomes the CA, as private files, and signs from then on', async () => {
  const keys = freshKeys();
  const brought = await CertificateAuthority.create({ now: NOW, notAfter: LATER });
  assert.equal(keys.caState(brought.certificatePem, brought.privateKeyPem), 'missing');
  assert.deepEqual(await keys.adoptCa(brought.certificatePem, brought.privateKeyPem), {
    path: keys.caCertificatePath,
    created: true,
  });
  assert.equal(statSync(keys.caKeyPath).mode & 0o777, 0o600);
  assert.equal(statSync(path.dirname(keys.caKeyPath)).mode & 0o777, 0o700);
  assert.equal((await keys.ca())?.certificatePem.trim(), brought.certificatePem.trim());
  assert.equal(keys.caState(brought.certificatePem, brought.privateKeyPem), 'same');
  assert.deepEqual(await keys.adoptCa(brought.certificatePem, brought.privateKeyPem), {
    path: keys.caCertificatePath,
    created: false,
  });
});

test('a CA already here that is another one is never replaced', async () => {
  const keys = freshKeys();
  await keys.createCa(NOW, LATER);
  const own = readFileSync(keys.caKeyPath, 'utf8');
  const brought = await CertificateAuthority.create({ now: NOW, notAfter: LATER });
  assert.equal(keys.caState(brought.certificatePem, brought.privateKeyPem), 'differs');
  await assert.rejects(keys.adoptCa(brought.certificatePem, brought.privateKeyPem), KeyFileDiffers);
  assert.equal(readFileSync(keys.caKeyPath, 'utf8'), own);
});

test("a profile's tls-crypt key brought from elsewhere is the one its servers use", () => {
  const keys = freshKeys();
  const brought = generateTlsCryptKey();
  assert.equal(keys.tlsCryptKeyState('employees', brought), 'missing');
  assert.equal(keys.adoptTlsCryptKey('employees', brought).created, true);
  assert.equal(keys.tlsCryptKey('employees'), brought.trimEnd());
  assert.equal(keys.adoptTlsCryptKey('employees', brought).created, false);
  assert.equal(keys.tlsCryptKeyState('employees', generateTlsCryptKey()), 'differs');
  assert.throws(() => keys.adoptTlsCryptKey('employees', generateTlsCryptKey()), KeyFileDiffers);
  assert.equal(keys.tlsCryptKey('employees'), brought.trimEnd());
});

test("a profile's tls-crypt key replaced in its file is used a second later, though the wall clock was set hours back", async (t) => {
  const keys = freshKeys();
  const [first, replacement] = [generateTlsCryptKey(), generateTlsCryptKey()];
  keys.adoptTlsCryptKey('employees', first);
  assert.equal(keys.tlsCryptKey('employees'), first.trimEnd());
  writeFileSync(keys.tlsCryptKeyPath('employees'), replacement);
  // The wall clock set 3 hours back (Date.now(), a test double).
  const wallNow = Date.now.bind(Date);
  t.mock.method(Date, 'now', () => wallNow() - 3 * 60 * 60 * 1000);
  await sleep(1_050);
  assert.equal(keys.tlsCryptKey('employees'), replacement.trimEnd(), 'the replacement, read again');
});
