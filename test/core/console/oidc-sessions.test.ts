// Console sessions signed in through OpenID Connect, on a real database: the session acts as
// `oidc:<subject>` with the scope and profiles its claims granted (kept on its row, read back on
// every request), ends by idle time and lifetime like any other, and ends at once when
// `adminConsole.oidc` is taken out of the configuration or grants by other rules. A refusal is an
// audit row.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ConsoleOidcSettings } from '../../../src/config/console-oidc.js';
import {
  checkSession,
  refuseOidcSignIn,
  signInWithOidc,
  type ConsoleSessionTimes,
} from '../../../src/core/console/index.js';
import { callerName, callerProfiles } from '../../../src/core/admin-call.js';
import type { PortalContext } from '../../../src/core/context.js';
import { Secret } from '../../../src/shared/secret.js';
import { asProfileId } from '../../../src/shared/ids.js';
import { auditLog, ManualClock } from '../../support/admin-keys.js';
import { startTestPortal } from '../../support/test-portal.js';

const MINUTE = 60_000;
const times: ConsoleSessionTimes = {
  idleTimeoutMs: 30 * MINUTE,
  sessionLifetimeMs: 60 * MINUTE,
  addressAllowed: () => true,
};

const oidc: ConsoleOidcSettings = {
  issuer: new URL('https://sso.example.org/realms/staff'),
  name: 'Example SSO',
  clientId: 'vpn-console',
  clientSecret: new Secret('s'),
  redirectUri: new URL('https://vpn.example.org/vpn-user-portal/admin/oidc/callback'),
  postLogoutRedirectUri: new URL('https://vpn.example.org/vpn-user-portal/admin/sign-in'),
  signOutAtProvider: false,
  requestScopes: ['openid'],
  scope: { claim: 'roles', read: ['viewer'], write: [], admin: [] },
  profiles: null,
};

function withOidc(ctx: PortalContext, settings: ConsoleOidcSettings | null): PortalContext {
  return { ...ctx, config: { ...ctx.config, adminConsole: { ...ctx.config.adminConsole, oidc: settings } } };
}

test('an OpenID session acts as oidc:<subject> with its granted scope and profiles until its lifetime, and ends when single sign-on is turned off', async (t) => {
  const clock = new ManualClock();
  const portal = await startTestPortal({ clock });
  t.after(portal.close);
  const ctx = withOidc(portal.portal.ctx, oidc);
  const grant = {
    subject: 'f3b1c2d4-0000-4000-8000-00000000000a',
    scope: 'read' as const,
    profiles: [asProfileId('employees')],
  };
  const signedIn = await signInWithOidc(ctx, grant, '127.0.0.1', times);
  assert.ok(signedIn.ok);
  const check = await checkSession(ctx, signedIn.session.token, '127.0.0.1', times);
  assert.ok(check.valid);
  assert.deepEqual(check.session.caller, {
    kind: 'oidc-session',
    subject: 'f3b1c2d4-0000-4000-8000-00000000000a',
    scope: 'read',
    profiles: ['employees'],
    sourceAddress: '127.0.0.1',
  });
  assert.equal(callerName(check.session.caller), 'oidc:f3b1c2d4-0000-4000-8000-00000000000a');
  const { signIn } = check.session;
  assert.ok(signIn.method === 'oidc' && /^[0-9a-f]{64}$/.test(signIn.rulesDigest), 'the rules that granted it');
  assert.deepEqual(
    { ...signIn, rulesDigest: null },
    { method: 'oidc', subject: grant.subject, scope: 'read', profiles: ['employees'], rulesDigest: null },
  );
  const row = (await auditLog(portal)).find((entry) => entry.call === 'console/sign_in');
  assert.equal(row?.keyName, 'oidc:f3b1c2d4-0000-4000-8000-00000000000a');
  assert.equal(row?.status, 200);

  for (let step = 0; step < 2; step++) {
    clock.advance(25 * MINUTE);
    assert.equal((await checkSession(ctx, signedIn.session.token, '127.0.0.1', times)).valid, true);
  }
  clock.advance(11 * MINUTE);
  assert.deepEqual(await checkSession(ctx, signedIn.session.token, '127.0.0.1', times), {
    valid: false,
    reason: 'Your session reached its end; sign in again.',
  });

  const another = await signInWithOidc(ctx, { ...grant, profiles: null }, '127.0.0.1', times);
  assert.ok(another.ok);
  const unlimited = await checkSession(ctx, another.session.token, '127.0.0.1', times);
  assert.equal(unlimited.valid && callerProfiles(unlimited.session.caller), null);
  assert.deepEqual(await checkSession(withOidc(ctx, null), another.session.token, '127.0.0.1', times), {
    valid: false,
    reason: 'Single sign-on is turned off on this portal; sign in again.',
  });
  assert.equal(
    (await checkSession(ctx, another.session.token, '127.0.0.1', times)).valid,
    false,
    'an ended session is gone',
  );
});

test('a refused single sign-on is an audit row under oidc:<subject>, or under no name when the provider named none', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  const ctx = withOidc(portal.portal.ctx, oidc);
  const refused = await refuseOidcSignIn(
    ctx,
    'bob',
    'Example SSO account "bob" may not use the console: no claim "roles" grants a console scope.',
    '10.0.0.7',
  );
  assert.deepEqual(refused, {
    ok: false,
    reason: 'Example SSO account "bob" may not use the console: no claim "roles" grants a console scope.',
  });
  await refuseOidcSignIn(
    ctx,
    null,
    'The sign-in took too long or was started in another browser; start it again.',
    '10.0.0.8',
  );
  const rows = (await auditLog(portal)).filter((entry) => entry.call === 'console/sign_in');
  assert.deepEqual(
    rows.map((entry) => [entry.keyName, entry.status, entry.sourceAddress, entry.detail]).sort(),
    [
      [
        'oidc:bob',
        403,
        '10.0.0.7',
        'Example SSO account "bob" may not use the console: no claim "roles" grants a console scope.',
      ],
      [null, 403, '10.0.0.8', 'The sign-in took too long or was started in another browser; start it again.'],
    ].sort(),
  );
});

test('an OpenID session ends once adminConsole.oidc grants by other rules (issuer, client, scope or profiles claim mapping), not when only its name or secret changes', async (t) => {
  const portal = await startTestPortal();
  t.after(portal.close);
  // A mapping that granted admin to every member of staff, by mistake.
  const careless: ConsoleOidcSettings = { ...oidc, scope: { claim: 'roles', read: [], write: [], admin: ['staff'] } };
  const grant = { subject: 'mallory', scope: 'admin' as const, profiles: null };
  const signInUnder = async (settings: ConsoleOidcSettings) => {
    const signedIn = await signInWithOidc(withOidc(portal.portal.ctx, settings), grant, '127.0.0.1', times);
    assert.ok(signedIn.ok);
    return signedIn.session.token;
  };
  const checkUnder = (settings: ConsoleOidcSettings, token: string) =>
    checkSession(withOidc(portal.portal.ctx, settings), token, '127.0.0.1', times);

  // The same rules read again (a restart), and a new button name and client secret: the session stays.
  const token = await signInUnder(careless);
  const renamed = {
    ...careless,
    scope: { ...careless.scope },
    name: 'Staff SSO',
    clientSecret: new Secret('rotated'),
  };
  assert.equal((await checkUnder(renamed, token)).valid, true);

  // The mistake corrected: the admin scope the old mapping granted is not kept.
  const corrected: ConsoleOidcSettings = {
    ...careless,
    scope: { claim: 'roles', read: [], write: [], admin: ['vpn-admin'] },
  };
  assert.deepEqual(await checkUnder(corrected, token), {
    valid: false,
    reason: 'Single sign-on grants by other rules (adminConsole.oidc) than when you signed in; sign in again.',
  });
  assert.equal((await checkUnder(careless, token)).valid, false, 'an ended session is gone');

  for (const changed of [
    { ...careless, issuer: new URL('https://other-sso.example.org/realms/staff') },
    { ...careless, clientId: 'another-client' },
    { ...careless, profiles: { claim: 'groups', values: null } },
  ]) {
    const another = await signInUnder(careless);
    assert.equal((await checkUnder(changed, another)).valid, false, JSON.stringify(changed));
  }
});
