// Signing an Apple profile with PKI.js: the real `openssl smime -verify` accepts the SignedData
// against the root, with the chain carried in the message, for RSA and EC keys, and yields the
// property list byte for byte; a changed byte or another root makes it refuse.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { signProfile, type ProfileSigningMaterial } from '../../src/apple/profile-signing.js';
import { Secret } from '../../src/shared/secret.js';
import { makeSigningPki, type SigningPki } from '../support/signing-pki.js';

const PLIST =
  '<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0"><dict><key>Name</key><string>Café &amp; ☕</string></dict></plist>';

async function materialOf(pki: SigningPki): Promise<ProfileSigningMaterial> {
  return {
    certificate: await readFile(pki.signingCertificate, 'utf8'),
    key: new Secret(await readFile(pki.signingKey, 'utf8')),
    chain: [await readFile(pki.chain, 'utf8')],
  };
}

for (const keyType of ['rsa', 'ec'] as const) {
  test(`a profile signed with an ${keyType.toUpperCase()} key passes openssl smime -verify and yields the same bytes`, async (t) => {
    const pki = await makeSigningPki(keyType);
    t.after(() => pki.remove());
    const signed = await signProfile(PLIST, await materialOf(pki), new Date());
    assert.equal(await pki.verify(signed), PLIST);
  });
}

test('a changed byte, or a chain left out, makes openssl refuse', async (t) => {
  const pki = await makeSigningPki('ec');
  t.after(() => pki.remove());
  const material = await materialOf(pki);
  const signed = await signProfile(PLIST, material, new Date());
  const tampered = Buffer.from(signed);
  const at = tampered.indexOf(Buffer.from('Caf'));
  assert.ok(at > 0, 'the content is inside the message');
  tampered[at] = 'K'.charCodeAt(0);
  await assert.rejects(pki.verify(tampered), /digest failure|verify error|Verification failure/i);
  const withoutChain = await signProfile(PLIST, { ...material, chain: [] }, new Date());
  await assert.rejects(pki.verify(withoutChain), /unable to get local issuer certificate|Verification failure/i);
});
