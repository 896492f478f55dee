// Enrollment tokens: POST /enrollment_token makes one (a prefixed, checksummed secret stored
// only as a keyed hash), a device redeems it at the public {baseUrl}enroll with its own key and
// no admin key, and it is consumed atomically: of 20 parallel redemptions of a one-use token
// exactly one makes a configuration. Expired, used-up, revoked tokens and tokens of users
// disabled or destroyed meanwhile get 410; a redemption without the device's own key, or
// refused for any other reason, takes no use. The endpoint has its own allow-list and a limit
// per source address.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { ENROLLMENT_TOKEN_PATTERN } from '../../../src/keys/enrollment-token.js';
import { runHousekeepingIfDue } from '../../../src/core/reconcile/housekeeping.js';
import { DEVICE_PRIVATE_KEY_PLACEHOLDER } from '../../../src/wireguard/client-config.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { auditLog, bearer, makeAdminKey, ManualClock, mistyped, portalState } from '../../support/admin-keys.js';
import { bit255Twin, BOTH_PROTOCOLS_PROFILE, databaseText, opensslCsr } from '../../support/device-keys.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal, type ApiResponse, type TestPortal } from '../../support/test-portal.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

const WIREGUARD = 'application/x-wireguard-profile';
const OPENVPN = 'application/x-openvpn-profile';
const APPLE = 'application/x-apple-aspen-config';
const HOUR_MS = 3_600_000;

/** One profile with WireGuard and OpenVPN; the limit per address out of the way unless a test sets it. */
const config: Partial<PortalConfigFile> = {
  ProfileList: [BOTH_PROTOCOLS_PROFILE],
  enrollment: { requestsPerMinute: 10_000 },
};

async function startPortal(
  t: { after: (fn: () => Promise<void>) => void },
  options: { config?: Partial<PortalConfigFile>; clock?: ManualClock } = {},
): Promise<TestPortal> {
  const portal = await startTestPortal({
    config: { ...config, ...options.config },
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  t.after(() => portal.close());
  return portal;
}

/** POST {baseUrl}enroll as a device sends it: no Authorization header. */
function enroll(portal: TestPortal, form: Record<string, string>, accept = WIREGUARD): Promise<ApiResponse> {
  return portal.request(`${portal.portal.url}${portal.portal.ctx.config.basePath}/enroll`, {
    method: 'POST',
    body: new URLSearchParams(form),
    headers: { accept },
  });
}

async function makeToken(
  portal: TestPortal,
  form: Record<string, string> = {},
): Promise<{ enrollment_token: string; token_id: string; expires_at: string; uses: number }> {
  const response = await portal.post('/enrollment_token', { user_id: 'alice', profile_id: 'both', ...form });
  assert.equal(response.status, 200, response.text);
  return response.json() as { enrollment_token: string; token_id: string; expires_at: string; uses: number };
}

const devicePublicKey = (): string => generateWireGuardKeyPair().publicKey;

test('a token is vpe_ with a checksum, valid an hour for one use by default, listed without its secret, stored only as a hash and audited', async (t) => {
  const clock = new ManualClock();
  const portal = await startPortal(t, { clock });
  const made = await makeToken(portal, { display_name: 'Laptop 17' });
  assert.match(made.enrollment_token, ENROLLMENT_TOKEN_PATTERN);
  assert.equal(made.enrollment_token.slice(4, 16), made.token_id);
  assert.equal(made.uses, 1);
  assert.equal(Date.parse(made.expires_at), clock.now().getTime() + HOUR_MS);

  const [listed] = await portal.admin.enrollmentTokens('alice');
  assert.deepEqual(
    { ...listed },
    {
      token_id: made.token_id,
      user_id: 'alice',
      profile_id: 'both',
      display_name: 'Laptop 17',
      expires_in: null,
      uses: 1,
      uses_left: 1,
      state: 'usable',
      created_at: '2026-03-02T09:00:00+00:00',
      created_by: 'secret',
      expires_at: made.expires_at,
      revoked_at: null,
      last_used_at: null,
    },
  );
  assert.deepEqual(await portal.admin.users(), ['alice'], 'the user is made when missing, as create does');
  assert.ok(
    !(await databaseText(portal.portal.ctx.db)).includes(made.enrollment_token.slice(17)),
    'the secret part is not stored',
  );
  const [entry] = await auditLog(portal, 1);
  assert.deepEqual(
    [entry?.call, entry?.keyName, entry?.userId, entry?.status],
    ['enrollment_token', 'secret', 'alice', 200],
  );
  assert.ok(!JSON.stringify(entry).includes(made.enrollment_token), 'the audit row holds no token');
});

test('a device redeems the token with its own public key and no admin key; the second redemption gets 410', async (t) => {
  const portal = await startPortal(t);
  const made = await makeToken(portal, { display_name: 'Laptop 17', expires_in: 'PT12H' });
  const publicKey = devicePublicKey();
  const redeemed = await enroll(portal, { enrollment_token: made.enrollment_token, public_key: publicKey });
  assert.equal(redeemed.status, 200, redeemed.text);
  assert.equal(redeemed.headers.get('content-type'), WIREGUARD);
  assert.equal(
    parseWireGuardFile(redeemed.text).interface.get('PrivateKey'),
    DEVICE_PRIVATE_KEY_PLACEHOLDER,
    'the device fills in its own key',
  );
  const [configuration] = await portal.admin.userConfigurationList('alice');
  assert.deepEqual(
    [configuration?.connection_id, configuration?.profile_id, configuration?.display_name],
    [publicKey, 'both', 'Laptop 17'],
  );
  const expires = Date.parse(redeemed.headers.get('expires') ?? '');
  assert.ok(
    Math.abs(expires - (Date.now() + 12 * HOUR_MS)) < 5_000,
    "the token's expires_in is the configuration's lifetime",
  );

  const again = await enroll(portal, { enrollment_token: made.enrollment_token, public_key: devicePublicKey() });
  assert.equal(again.status, 410, again.text);
  assert.match(again.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(errorBody(again.text), 'enrollment token is used up (1 of 1 uses taken)');
  assert.equal((await portal.admin.userConfigurationList('alice')).length, 1);
  const [listed] = await portal.admin.enrollmentTokens();
  assert.deepEqual([listed?.state, listed?.uses_left, listed?.last_used_at !== null], ['used-up', 0, true]);
});

test('20 parallel redemptions of a one-use token make exactly one configuration', async (t) => {
  const portal = await startPortal(t);
  const made = await makeToken(portal);
  const keys = Array.from({ length: 20 }, devicePublicKey);
  const answers = await Promise.all(
    keys.map((public_key) => enroll(portal, { enrollment_token: made.enrollment_token, public_key })),
  );
  const statuses = answers.map((answer) => answer.status).sort();
  assert.deepEqual(
    statuses,
    [200, ...Array.from({ length: 19 }, () => 410)],
    answers.map((answer) => answer.text.slice(0, 80)).join('\n'),
  );
  const configurations = await portal.admin.userConfigurationList('alice');
  assert.equal(configurations.length, 1);
  const winner = keys[answers.findIndex((answer) => answer.status === 200)];
  assert.equal(configurations[0]?.connection_id, winner, "the configuration is the winning device's");
  const [listed] = await portal.admin.enrollmentTokens();
  assert.equal(listed?.uses_left, 0);
});

test('a token with three uses makes three configurations, in parallel too, and refuses the fourth', async (t) => {
  const portal = await startPortal(t);
  const made = await makeToken(portal, { uses: '3', valid_for: 'P7D' });
  assert.equal(made.uses, 3);
  const answers = await Promise.all(
    Array.from({ length: 6 }, () =>
      enroll(portal, { enrollment_token: made.enrollment_token, public_key: devicePublicKey() }),
    ),
  );
  assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 200, 200, 410, 410, 410]);
  assert.equal((await portal.admin.userConfigurationList('alice')).length, 3);
});

test('an expired token gets 410 and makes nothing', async (t) => {
  const clock = new ManualClock();
  const portal = await startPortal(t, { clock });
  const made = await makeToken(portal, { valid_for: 'PT10M' });
  clock.advance(10 * 60_000);
  const before = await portalState(portal);
  const expired = await enroll(portal, { enrollment_token: made.enrollment_token, public_key: devicePublicKey() });
  assert.equal(expired.status, 410, expired.text);
  assert.equal(errorBody(expired.text), `enrollment token expired at ${made.expires_at}`);
  assert.deepEqual(await portalState(portal), before);
  assert.equal((await portal.admin.enrollmentTokens())[0]?.state, 'expired');
});

test('a revoked token gets 410; revoking again changes nothing; another user cannot name it', async (t) => {
  const portal = await startPortal(t);
  const made = await makeToken(portal);
  const elsewhere = await portal.post('/revoke_enrollment_token', { user_id: 'bob', token_id: made.token_id });
  assert.equal(elsewhere.status, 404, elsewhere.text);
  assert.equal(errorBody(elsewhere.text), 'the user has no enrollment token with this "token_id"');
  await portal.admin.revokeEnrollmentToken('alice', made.token_id);
  await portal.admin.revokeEnrollmentToken('alice', made.token_id);
  const revoked = await enroll(portal, { enrollment_token: made.enrollment_token, public_key: devicePublicKey() });
  assert.equal(revoked.status, 410, revoked.text);
  assert.match(errorBody(revoked.text), /^enrollment token was revoked at \d{4}-/);
  assert.deepEqual(await portal.admin.userConfigurationList('alice'), []);
  const entries = await auditLog(portal, 3);
  assert.deepEqual(
    entries.map((entry) => [entry.call, entry.status, entry.userId]),
    [
      ['revoke_enrollment_token', 204, 'alice'],
      ['revoke_enrollment_token', 204, 'alice'],
      ['revoke_enrollment_token', 404, 'bob'],
    ],
    'both revocations and the refusal are in the audit log',
  );
});

test('disabling the user revokes its tokens for good; destroying it deletes them; a disabled user gets no token', async (t) => {
  const portal = await startPortal(t);
  const forDisabled = await makeToken(portal);
  await portal.admin.disableUser('alice');
  const refused = await portal.post('/enrollment_token', { user_id: 'alice', profile_id: 'both' });
  assert.equal(refused.status, 403, refused.text);
  assert.equal(errorBody(refused.text), 'user is disabled');
  await portal.admin.enableUser('alice');
  const afterDisable = await enroll(portal, {
    enrollment_token: forDisabled.enrollment_token,
    public_key: devicePublicKey(),
  });
  assert.equal(afterDisable.status, 410, afterDisable.text);
  assert.match(
    errorBody(afterDisable.text),
    /^enrollment token was revoked at /,
    'enabling the user did not bring it back',
  );

  const forDestroyed = await makeToken(portal);
  await portal.admin.destroy('alice');
  const afterDestroy = await enroll(portal, {
    enrollment_token: forDestroyed.enrollment_token,
    public_key: devicePublicKey(),
  });
  assert.equal(afterDestroy.status, 410, afterDestroy.text);
  assert.equal(errorBody(afterDestroy.text), 'unknown enrollment token: it never existed, or its user was destroyed');
  assert.deepEqual(await portal.admin.users(), [], 'the redemption did not bring the user back');
  assert.deepEqual(await portal.admin.enrollmentTokens(), []);
});

test('a redemption without a device key, with a key in use or its bit-255 twin, for a format that needs a private key, or malformed is refused and takes no use', async (t) => {
  const portal = await startPortal(t);
  const made = await makeToken(portal);
  const taken = devicePublicKey();
  assert.equal(
    (await portal.post('/create', { user_id: 'bob', profile_id: 'both', public_key: taken }, { accept: WIREGUARD }))
      .status,
    200,
  );
  const before = await portalState(portal);
  const cases: [Record<string, string>, string, number, RegExp][] = [
    [
      { enrollment_token: made.enrollment_token },
      WIREGUARD,
      400,
      /^an enrollment needs the device's own key: "public_key" .* or "csr"/,
    ],
    [
      { enrollment_token: made.enrollment_token, public_key: taken },
      WIREGUARD,
      409,
      /^"public_key" is already in use$/,
    ],
    [{ enrollment_token: made.enrollment_token, public_key: devicePublicKey() }, APPLE, 406, /Apple profile/],
    [
      { enrollment_token: made.enrollment_token, public_key: 'not a key' },
      WIREGUARD,
      400,
      /^invalid value for "public_key"$/,
    ],
    [
      { enrollment_token: made.enrollment_token, public_key: bit255Twin(taken) },
      WIREGUARD,
      400,
      /^invalid value for "public_key": not the canonical encoding of an X25519 public key \(bit 255 set/,
    ],
    [{ public_key: devicePublicKey() }, WIREGUARD, 400, /^missing post parameter "enrollment_token"$/],
    [
      { enrollment_token: mistyped(made.enrollment_token), public_key: devicePublicKey() },
      WIREGUARD,
      400,
      /wrong form or checksum/,
    ],
  ];
  for (const [form, accept, status, message] of cases) {
    const answer = await enroll(portal, form, accept);
    assert.equal(answer.status, status, `${JSON.stringify(form)}: ${answer.text}`);
    assert.match(errorBody(answer.text), message);
  }
  assert.deepEqual(await portalState(portal), before, 'nothing changed, the use is still there');
  assert.equal(
    (await enroll(portal, { enrollment_token: made.enrollment_token, public_key: devicePublicKey() })).status,
    200,
  );
});

test('a well-formed token the portal never made gets 410, as does an admin key', async (t) => {
  const portal = await startPortal(t);
  const other = await startTestPortal({ config });
  t.after(() => other.close());
  const foreign = await makeToken(other);
  const unknown = await enroll(portal, { enrollment_token: foreign.enrollment_token, public_key: devicePublicKey() });
  assert.equal(unknown.status, 410, unknown.text);
  const adminKey = await makeAdminKey(portal, 'mdm', { scope: 'write' });
  const notAToken = await enroll(portal, { enrollment_token: adminKey, public_key: devicePublicKey() });
  assert.equal(notAToken.status, 400, notAToken.text);
});

test('a device with a CSR gets the OpenVPN file with no key in it', async (t) => {
  const portal = await startPortal(t);
  const made = await makeToken(portal);
  const csr = opensslCsr('Ed25519');
  const redeemed = await enroll(portal, { enrollment_token: made.enrollment_token, csr: csr.csrPem }, OPENVPN);
  assert.equal(redeemed.status, 200, redeemed.text);
  assert.equal(redeemed.headers.get('content-type'), OPENVPN);
  assert.doesNotMatch(redeemed.text, /<key>|PRIVATE KEY/);
  assert.equal((await portal.admin.userConfigurationList('alice'))[0]?.vpn_proto, 'openvpn');
});

test('bad parameters of enrollment_token are refused with the reason and make nothing', async (t) => {
  const portal = await startPortal(t);
  const before = await portalState(portal);
  const cases: [Record<string, string>, number, string][] = [
    [{ uses: '0' }, 400, 'invalid value for "uses"'],
    [{ uses: '1001' }, 400, 'invalid value for "uses"'],
    [{ valid_for: 'P91D' }, 400, 'invalid value for "valid_for": a duration longer than zero and at most P90D'],
    [{ valid_for: 'PT0S' }, 400, 'invalid value for "valid_for": a duration longer than zero and at most P90D'],
    [{ valid_for: 'soon' }, 400, 'invalid value for "valid_for": "soon" is not an ISO 8601 duration such as P30D'],
    [
      { expires_in: '30d' },
      400,
      'invalid value for "expires_in": "30d" is not an ISO 8601 duration such as P30D; allowed here: P90D, PT12H, P1Y',
    ],
    [
      { expires_in: 'P3D' },
      400,
      'provided "expires_in" is not supported by the server, add it to "supportedSessionExpiry" configuration option (supported: P90D, PT12H, P1Y)',
    ],
    [{ profile_id: 'nope' }, 404, 'no such "profile_id": "nope"; known profiles: both'],
  ];
  for (const [form, status, message] of cases) {
    const answer = await portal.post('/enrollment_token', { user_id: 'alice', profile_id: 'both', ...form });
    assert.equal(answer.status, status, `${JSON.stringify(form)}: ${answer.text}`);
    assert.equal(errorBody(answer.text), message);
  }
  assert.deepEqual(await portalState(portal), before);
});

test('a write key limited to a profile makes tokens for it; the endpoint needs no admin key but refuses addresses outside enrollment.allowList', async (t) => {
  const portal = await startPortal(t, {
    config: { enrollment: { allowList: ['192.0.2.0/24'], requestsPerMinute: 10_000 } },
  });
  const mdm = await makeAdminKey(portal, 'mdm', { scope: 'write', profiles: ['both'] });
  const made = await portal.post('/enrollment_token', { user_id: 'alice', profile_id: 'both' }, bearer(mdm));
  assert.equal(made.status, 200, made.text);
  assert.equal((await portal.admin.enrollmentTokens())[0]?.created_by, 'mdm');
  const { enrollment_token } = made.json() as { enrollment_token: string };
  const refused = await enroll(portal, { enrollment_token, public_key: devicePublicKey() });
  assert.equal(refused.status, 403, refused.text);
  assert.equal(errorBody(refused.text), 'source address not allowed');
  assert.equal((await portal.admin.enrollmentTokens())[0]?.uses_left, 1);
});

test('more requests per minute than enrollment.requestsPerMinute from one address get 429 with Retry-After, before the token is looked at, and the minute is a minute whatever the wall clock does', async (t) => {
  const clock = new ManualClock();
  // The minute is measured on the monotonic clock: real time, plus what the story lets pass.
  const realNow = performance.now.bind(performance);
  let passed = 0;
  t.mock.method(performance, 'now', () => realNow() + passed);
  const portal = await startPortal(t, { clock, config: { enrollment: { requestsPerMinute: 3 } } });
  const made = await makeToken(portal, { uses: '10' });
  const statuses: number[] = [];
  for (let attempt = 0; attempt < 5; attempt++) {
    const answer = await enroll(portal, { enrollment_token: made.enrollment_token, public_key: devicePublicKey() });
    statuses.push(answer.status);
    if (answer.status === 429) {
      const seconds = /^too many enrollment requests from this address; try again in (\d+) s$/.exec(
        errorBody(answer.text),
      )?.[1];
      assert.equal(answer.headers.get('retry-after'), seconds);
      assert.ok(Number(seconds) > 30 && Number(seconds) <= 60, `the rest of the minute, not ${seconds} s`);
    }
  }
  assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
  assert.equal((await portal.admin.userConfigurationList('alice')).length, 3);
  // Someone sets the portal's wall clock back an hour; a minute goes by.
  clock.advance(-3_600_000);
  passed += 60_000;
  assert.equal(
    (await enroll(portal, { enrollment_token: made.enrollment_token, public_key: devicePublicKey() })).status,
    200,
    'the next minute counts afresh',
  );
});

test('the daily housekeeping deletes tokens that ended more than 30 days ago and keeps the others', async (t) => {
  const clock = new ManualClock();
  const portal = await startPortal(t, { clock });
  await portal.reconcile(); // the start-up pass (and its housekeeping) is done before the clock moves
  const expired = await makeToken(portal, { valid_for: 'PT10M' });
  const revoked = await makeToken(portal, { valid_for: 'P90D' });
  await portal.admin.revokeEnrollmentToken('alice', revoked.token_id);
  const usable = await makeToken(portal, { valid_for: 'P90D' });
  clock.advance(29 * 24 * HOUR_MS);
  const recentlyExpired = await makeToken(portal, { valid_for: 'PT1H' });
  clock.advance(2 * 24 * HOUR_MS);
  const result = await runHousekeepingIfDue(portal.portal.ctx);
  assert.equal(result?.enrollmentTokensDeleted, 2);
  const left = (await portal.admin.enrollmentTokens()).map((token) => [token.token_id, token.state]).sort();
  assert.deepEqual(
    left,
    [
      [recentlyExpired.token_id, 'expired'],
      [usable.token_id, 'usable'],
    ].sort(),
  );
  assert.ok(![expired.token_id, revoked.token_id].some((id) => left.some(([listed]) => listed === id)));
});
