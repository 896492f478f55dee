// POST /create for managed Apple devices: `platform` picks the WireGuard app (iOS or macOS) and
// keeps the Apple profile from other platforms (406 naming what they take), `on_demand` and
// the profile's `appleOnDemand` make it always on, and with `apple.signing*` the answer is a
// CMS SignedData that `openssl smime -verify` accepts. Bad input changes nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { parse } from 'plist';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { assertConformsToAppleSchema } from '../../support/apple-schema.js';
import { errorBody, rawRequest, type RawResponse } from '../../support/raw-http.js';
import { makeSigningPki, type SigningPki } from '../../support/signing-pki.js';
import { defaultTestConfig, startTestPortal, type TestPortal } from '../../support/test-portal.js';

const APPLE = 'application/x-apple-aspen-config';
const WIREGUARD = 'application/x-wireguard-profile';

type ProfileFile = PortalConfigFile['ProfileList'][number];
const [employees] = defaultTestConfig.ProfileList as [ProfileFile];

async function portalWith(t: TestContext, config: Partial<PortalConfigFile> = {}): Promise<TestPortal> {
  const portal = await startTestPortal({ config });
  t.after(() => portal.close());
  return portal;
}

function create(
  portal: TestPortal,
  accept: string | null,
  form: Record<string, string> = {},
  headers: Record<string, string> = {},
): Promise<RawResponse> {
  return rawRequest(`${portal.adminBase}/create`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${portal.secret}`,
      'content-type': 'application/x-www-form-urlencoded',
      ...(accept === null ? {} : { accept }),
      ...headers,
    },
    body: new URLSearchParams({ user_id: 'alice', profile_id: 'employees', ...form }).toString(),
  });
}

interface VpnPayload {
  readonly VPNSubType: string;
  readonly VPN: { readonly OnDemandEnabled?: number; readonly OnDemandRules?: readonly Record<string, unknown>[] };
}

function vpnPayload(xml: string): VpnPayload {
  const [payload] = (parse(xml) as unknown as { PayloadContent: VpnPayload[] }).PayloadContent;
  assert.ok(payload !== undefined, 'one VPN payload');
  return payload;
}

async function configurationCount(portal: TestPortal): Promise<number> {
  return (await portal.portal.ctx.db.selectFrom('wg_peers').select('public_key').execute()).length;
}

describe('platform', () => {
  test("macos gets the WireGuard app for macOS, ios and no platform the app for iOS; both conform to Apple's schema", async (t) => {
    const portal = await portalWith(t);
    for (const [form, bundle] of [
      [{ platform: 'macos' }, 'com.wireguard.macos'],
      [{ platform: 'ios' }, 'com.wireguard.ios'],
      [{}, 'com.wireguard.ios'],
    ] as const) {
      const response = await create(portal, APPLE, form);
      assert.equal(response.status, 200, response.text);
      assert.equal(response.headers['content-type'], APPLE);
      assert.equal(vpnPayload(response.text).VPNSubType, bundle, JSON.stringify(form));
      assertConformsToAppleSchema(response.text, JSON.stringify(form));
    }
  });

  test('another platform asking for the Apple profile gets 406 naming the formats it can take, and nothing is created', async (t) => {
    const portal = await portalWith(t);
    for (const platform of ['android', 'windows', 'linux', 'other']) {
      const response = await create(portal, APPLE, { platform });
      assert.equal(response.status, 406, response.text);
      assert.equal(
        errorBody(response.text),
        `no common VPN protocol [CLIENT=${APPLE} SERVER=${WIREGUARD}]; platform "${platform}" takes application/x-openvpn-profile, ${WIREGUARD}, application/x-wireguard+tcp-profile`,
      );
    }
    assert.equal(await configurationCount(portal), 0);
    const wireGuard = await create(portal, null, { platform: 'android' });
    assert.equal(wireGuard.status, 200, wireGuard.text);
    assert.equal(wireGuard.headers['content-type'], WIREGUARD, 'the platform takes the WireGuard file as before');
  });

  test('an unknown platform is 400 listing the values; nothing is created', async (t) => {
    const portal = await portalWith(t);
    for (const platform of ['ipados', 'iOS', '']) {
      const response = await create(portal, APPLE, { platform });
      assert.equal(response.status, 400, response.text);
      assert.equal(
        errorBody(response.text),
        'invalid value for "platform": one of ios, macos, windows, android, linux, other',
      );
    }
    assert.equal(await configurationCount(portal), 0);
  });

  test('the typed client sends the platform', async (t) => {
    const portal = await portalWith(t);
    const created = await portal.admin.create({ user_id: 'alice', profile_id: 'employees', platform: 'macos' }, APPLE);
    assert.equal(created.binary, false);
    assert.equal(vpnPayload(created.body).VPNSubType, 'com.wireguard.macos');
  });
});

describe('on demand', () => {
  const appleOnDemand = { trustedSsids: ['Office'], probeUrl: 'https://intranet.example.org/probe' };
  const rules = [
    { Action: 'Disconnect', InterfaceTypeMatch: 'WiFi', SSIDMatch: ['Office'] },
    { Action: 'Disconnect', URLStringProbe: 'https://intranet.example.org/probe' },
    { Action: 'Connect' },
  ];

  test("the profile's appleOnDemand gives the rules; on_demand=no leaves them out", async (t) => {
    const portal = await portalWith(t, { ProfileList: [{ ...employees, appleOnDemand }] });
    const always = vpnPayload((await create(portal, APPLE)).text);
    assert.equal(always.VPN.OnDemandEnabled, 1);
    assert.deepEqual(always.VPN.OnDemandRules, rules);
    assert.deepEqual(vpnPayload((await create(portal, APPLE, { on_demand: 'yes' })).text).VPN.OnDemandRules, rules);
    const byHand = vpnPayload((await create(portal, APPLE, { on_demand: 'no' })).text);
    assert.equal(byHand.VPN.OnDemandEnabled, undefined);
    assert.equal(byHand.VPN.OnDemandRules, undefined);
  });

  test('on_demand=yes without appleOnDemand connects everywhere; without either there are no rules', async (t) => {
    const portal = await portalWith(t);
    const yes = vpnPayload((await create(portal, APPLE, { on_demand: 'yes' })).text);
    assert.equal(yes.VPN.OnDemandEnabled, 1);
    assert.deepEqual(yes.VPN.OnDemandRules, [{ Action: 'Connect' }]);
    assert.equal(vpnPayload((await create(portal, APPLE)).text).VPN.OnDemandRules, undefined);
  });

  test('on_demand=maybe is 400 and creates nothing', async (t) => {
    const portal = await portalWith(t);
    const response = await create(portal, APPLE, { on_demand: 'maybe' });
    assert.equal(response.status, 400, response.text);
    assert.equal(errorBody(response.text), 'invalid value for "on_demand"');
    assert.equal(await configurationCount(portal), 0);
  });
});

describe('signed profiles', () => {
  let pki: SigningPki;
  before(async () => {
    pki = await makeSigningPki('rsa');
  });
  after(() => pki.remove());

  function signingConfig(): Partial<PortalConfigFile> {
    return {
      apple: { signingCertificate: pki.signingCertificate, signingKey: pki.signingKey, signingChain: pki.chain },
    };
  }

  test('the Apple profile is a CMS SignedData that openssl smime -verify accepts, holding a conforming profile', async (t) => {
    const portal = await portalWith(t, {
      ...signingConfig(),
      ProfileList: [{ ...employees, appleOnDemand: { trustedSsids: ['Office'] } }],
    });
    const response = await create(portal, APPLE, { platform: 'macos', display_name: 'R&D <Mac> \u0001' });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.headers['content-type'], APPLE);
    assert.equal(response.headers['content-disposition'], 'attachment; filename="employees.mobileconfig"');
    assert.equal(response.bytes[0], 0x30, 'DER: a SEQUENCE');
    const xml = await pki.verify(response.bytes);
    assert.equal(vpnPayload(xml).VPNSubType, 'com.wireguard.macos');
    assertConformsToAppleSchema(xml, 'signed over HTTP');

    const wireGuard = await create(portal, WIREGUARD);
    assert.match(wireGuard.text, /^\[Interface\]/m, 'other formats stay text');
  });

  test('a retry with the same Idempotency-Key gets the same signed bytes', async (t) => {
    const portal = await portalWith(t, signingConfig());
    const first = await create(portal, APPLE, {}, { 'idempotency-key': 'apple-1' });
    const again = await create(portal, APPLE, {}, { 'idempotency-key': 'apple-1' });
    assert.equal(first.status, 200, first.text);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.bytes, first.bytes);
    assert.equal(again.headers['content-type'], APPLE);
    assert.equal(await configurationCount(portal), 1);
  });

  test('the typed client hands over the bytes and says they are binary', async (t) => {
    const portal = await portalWith(t, signingConfig());
    const created = await portal.admin.create({ user_id: 'alice', profile_id: 'employees' }, APPLE);
    assert.equal(created.binary, true);
    assert.match(await pki.verify(created.bytes), /<string>com\.wireguard\.ios<\/string>/);
  });
});

describe('replacement in place', () => {
  interface Identifiers {
    readonly PayloadIdentifier: string;
    readonly PayloadUUID: string;
    readonly PayloadContent: readonly {
      readonly PayloadIdentifier: string;
      readonly PayloadUUID: string;
      readonly VPNSubType: string;
    }[];
  }
  const identifiersOf = (response: RawResponse) => {
    assert.equal(response.status, 200, response.text);
    const profile = parse(response.text) as unknown as Identifiers;
    const [vpn] = profile.PayloadContent;
    return {
      ids: [profile.PayloadIdentifier, profile.PayloadUUID, vpn?.PayloadIdentifier, vpn?.PayloadUUID],
      app: vpn?.VPNSubType,
    };
  };

  test("a Mac's re-issue keeps every identifier, so the device replaces its tunnel; another device and a configuration without one get their own", async (t) => {
    const portal = await portalWith(t);
    const register = async (serial: string) => {
      const response = await portal.post('/register_device', {
        user_id: 'alice',
        profile_id: 'employees',
        platform: 'macos',
        serial,
      });
      assert.equal(response.status, 200, response.text);
      return (response.json() as { device: { device_id: string } }).device.device_id;
    };
    const mac = await register('C02-MAC-1');
    const other = await register('C02-MAC-2');

    const first = identifiersOf(await create(portal, APPLE, { device_id: mac }));
    const again = identifiersOf(await create(portal, APPLE, { device_id: mac }));
    assert.equal(first.app, 'com.wireguard.macos', "the device's platform is the default");
    assert.deepEqual(again.ids, first.ids, 'the re-issue has the same PayloadIdentifier and PayloadUUIDs');
    assert.equal(await configurationCount(portal), 1, 'and it replaced the configuration');

    const otherDevice = identifiersOf(await create(portal, APPLE, { device_id: other }));
    const plain = identifiersOf(await create(portal, APPLE));
    const plainAgain = identifiersOf(await create(portal, APPLE));
    for (const [name, ids] of [
      ['another device', otherDevice.ids],
      ['a configuration without a device', plain.ids],
    ] as const) {
      for (const [index, id] of ids.entries())
        assert.notEqual(id, first.ids[index], `${name} shares no identifier with the Mac`);
    }
    for (const [index, id] of plainAgain.ids.entries())
      assert.notEqual(id, plain.ids[index], 'without a device, identifiers stay per configuration');
  });
});
