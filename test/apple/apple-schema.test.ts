// Every Apple profile the portal makes, checked against Apple's published schema (copied into
// test/support/apple-schema/): iOS and macOS, with and without on-demand rules, signed (the
// signature checked and the content taken out by `openssl smime -verify`) and unsigned, with
// display names holding XML specials, control characters and 64 non-ASCII characters. The
// WireGuard app's own keys are the only exceptions, each named with its source.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { renderAppleMobileconfig, type AppleOnDemand } from '../../src/apple/mobileconfig.js';
import { signProfile } from '../../src/apple/profile-signing.js';
import { APPLE_PLATFORMS } from '../../src/shared/platforms.js';
import { Secret } from '../../src/shared/secret.js';
import { exampleAppleConfiguration, exampleAppleProfile } from '../support/apple-fixtures.js';
import {
  assertConformsToAppleSchema,
  readPlist,
  validateProfile,
  WIREGUARD_APP_EXCEPTIONS,
} from '../support/apple-schema.js';
import { makeSigningPki, type SigningPki } from '../support/signing-pki.js';
import { readFile } from 'node:fs/promises';

const DISPLAY_NAMES = {
  plain: 'Laptop',
  'XML specials': 'R&D <lab> "quoted" \'single\' ]]> &amp;',
  'control characters': 'a\u0001b\u0008c\u000Bd\u001Fe\u007Ff\tg',
  '64 non-ASCII characters': `${'ü'.repeat(20)}${'日本'.repeat(10)}${'Ж'.repeat(20)}😀✓é€`,
};
const ON_DEMAND: Readonly<Record<string, AppleOnDemand | null>> = {
  'without on-demand': null,
  'always connect': { trustedSsids: [], probeUrl: null },
  'trusted Wi-Fi and a probe': {
    trustedSsids: ['Office', 'Lab & <Guests>', 'Café ☕'],
    probeUrl: 'https://intranet.example.org/probe?a=1&b=2',
  },
};

function render(
  platform: (typeof APPLE_PLATFORMS)[number],
  onDemand: AppleOnDemand | null,
  displayName: string,
): string {
  return renderAppleMobileconfig(exampleAppleProfile, exampleAppleConfiguration(displayName, { platform, onDemand }));
}

describe("Apple's schema", () => {
  let pki: SigningPki;
  before(async () => {
    pki = await makeSigningPki('ec');
  });
  after(() => pki.remove());

  test("the only keys allowed beyond Apple's file are the two the WireGuard app needs, each with its source", () => {
    assert.deepEqual(
      WIREGUARD_APP_EXCEPTIONS.map((exception) => `${exception.payloadType}: ${exception.path.join(' → ')}`),
      ['com.apple.vpn.managed: VPN → RemoteAddress', 'com.apple.vpn.managed: VendorConfig → WgQuickConfig'],
    );
    for (const exception of WIREGUARD_APP_EXCEPTIONS)
      assert.match(exception.source, /wireguard-apple MOBILECONFIG\.md/);
  });

  test('the 64-character name is 64 characters, none of them ASCII', () => {
    const name = DISPLAY_NAMES['64 non-ASCII characters'];
    assert.equal([...name].length, 64);
    assert.ok([...name].every((character) => (character.codePointAt(0) ?? 0) > 0x7f));
  });

  for (const platform of APPLE_PLATFORMS) {
    for (const [onDemandName, onDemand] of Object.entries(ON_DEMAND)) {
      test(`${platform} profiles ${onDemandName} conform, signed and unsigned, whatever the display name`, async () => {
        const material = {
          certificate: await readFile(pki.signingCertificate, 'utf8'),
          key: new Secret(await readFile(pki.signingKey, 'utf8')),
          chain: [await readFile(pki.chain, 'utf8')],
        };
        for (const [nameKind, displayName] of Object.entries(DISPLAY_NAMES)) {
          const xml = render(platform, onDemand, displayName);
          assertConformsToAppleSchema(xml, `${platform}, ${onDemandName}, ${nameKind}, unsigned`);
          const unwrapped = await pki.verify(await signProfile(xml, material, new Date()));
          assert.equal(unwrapped, xml, 'the signed content is the property list, byte for byte');
          assertConformsToAppleSchema(unwrapped, `${platform}, ${onDemandName}, ${nameKind}, signed`);
        }
      });
    }
  }

  test('the VPN payload carries the on-demand keys where Apple places them, with the values it allows', () => {
    const top = readPlist(render('macos', ON_DEMAND['trusted Wi-Fi and a probe'] ?? null, 'Laptop'));
    assert.equal(top.tag, 'dict');
    const vpnPayload = top.value.get('PayloadContent');
    assert.equal(vpnPayload?.tag, 'array');
    const [payload] = vpnPayload.value;
    assert.equal(payload?.tag, 'dict');
    const vpn = payload.value.get('VPN');
    assert.equal(vpn?.tag, 'dict');
    assert.deepEqual(vpn.value.get('OnDemandEnabled'), { tag: 'integer', value: 1 }, 'an <integer>, not a <true/>');
    assert.equal(vpn.value.get('OnDemandRules')?.tag, 'array');
  });

  test('the checker itself refuses unknown keys, wrong types, missing keys and values outside the range', () => {
    const xml = render('ios', ON_DEMAND['always connect'] ?? null, 'Laptop');
    const broken = xml
      .replace(/(<key>VPNType<\/key>\s*)<string>VPN<\/string>/, '$1<string>WireGuard</string>')
      .replace(/(<key>PayloadVersion<\/key>\s*)<integer>1<\/integer>/, '$1<string>1</string>')
      .replace('<string>Connect</string>', '<string>Always</string>')
      .replace('<key>UserDefinedName</key>', '<key>UserDefinedNameX</key>')
      .replace('<key>AuthenticationMethod</key>', '<key>Unheard</key>');
    const problems = validateProfile(broken, WIREGUARD_APP_EXCEPTIONS).join('\n');
    assert.match(problems, /VPNType: "WireGuard" is not one of/);
    assert.match(problems, /TopLevel\.PayloadVersion: <string>, the schema says <integer>/);
    assert.match(problems, /OnDemandRules\[0\]\.Action: "Always" is not one of/);
    assert.match(problems, /UserDefinedNameX: not a key of this dictionary/);
    assert.match(problems, /UserDefinedName: required, missing/);
    assert.match(problems, /VPN\.Unheard: not a key of this dictionary/);
    assert.match(
      validateProfile(xml, []).join('\n'),
      /VPN\.RemoteAddress: not a key of this dictionary/,
      'without the exceptions RemoteAddress is unknown',
    );
  });
});
