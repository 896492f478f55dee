// The console's OpenID Connect flow against a real provider (oidc-provider in this process):
// the authorization URL carries PKCE, state and nonce; a code comes back and is exchanged; the
// claims grant a scope and profiles, or the account is refused with one line; a callback that
// does not belong to the browser's own flow, an ID token whose signature does not verify, or a
// provider that cannot be reached, is refused.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { resolveConsoleOidc, type ConsoleOidcSettings } from '../../../src/config/console-oidc.js';
import { ConsoleOidc, OIDC_FLOW_LIFETIME_MS } from '../../../src/http/console/oidc.js';
import { KeyStore } from '../../../src/keys/key-store.js';
import type { Clock } from '../../../src/shared/time.js';
import { startEndlessBody } from '../../support/endless-body.js';
import { signInAtProvider, startOidcProvider, type TestOidcProvider } from '../../support/oidc-provider.js';

const BASE_URL = new URL('https://vpn.example.org/vpn-user-portal/');
const CALLBACK = 'https://vpn.example.org/vpn-user-portal/admin/oidc/callback';

const accounts = {
  alice: { name: 'Alice', roles: ['vpn-operator', 'staff'], groups: ['vpn-employees'] },
  bob: { name: 'Bob', roles: ['staff'] },
  carol: { name: 'Carol', realm_access: { roles: ['vpn-admin'] }, groups: ['nobody-we-know'] },
};

class ClockAt implements Clock {
  at = Date.now();
  now(): Date {
    return new Date(this.at);
  }
}

interface Setup {
  readonly provider: TestOidcProvider;
  readonly oidc: ConsoleOidc;
  readonly clock: ClockAt;
}

async function setUp(
  t: TestContext,
  options: { scopeClaim?: string; profiles?: { claim: string; values?: Record<string, string[]> } } = {},
): Promise<Setup> {
  const provider = await startOidcProvider({ redirectUri: CALLBACK, accounts });
  const dir = mkdtempSync(path.join(tmpdir(), 'console-oidc-'));
  t.after(async () => {
    await provider.close();
    rmSync(dir, { recursive: true, force: true });
  });
  writeFileSync(path.join(dir, 'client-secret'), `${provider.clientSecret}\n`);
  chmodSync(path.join(dir, 'client-secret'), 0o600);
  const problems: string[] = [];
  const settings = resolveConsoleOidc(
    {
      issuer: provider.issuer,
      name: 'Test SSO',
      clientId: provider.clientId,
      clientSecretFile: 'client-secret',
      requestScopes: ['openid', 'profile', 'roles', 'groups'],
      signOutAtProvider: false,
      scope: { claim: options.scopeClaim ?? 'roles', read: ['staff'], write: ['vpn-operator'], admin: ['vpn-admin'] },
      ...(options.profiles === undefined ? {} : { profiles: options.profiles }),
    },
    BASE_URL,
    dir,
    ['employees', 'guests'],
    (option, message) => problems.push(`${option}: ${message}`),
  );
  assert.deepEqual(problems, []);
  const clock = new ClockAt();
  return { provider, oidc: new ConsoleOidc(settings as ConsoleOidcSettings, new KeyStore(dir), clock), clock };
}

async function signInAs(oidc: ConsoleOidc, login: string) {
  const start = await oidc.begin();
  assert.ok(start.ok, start.ok ? '' : start.reason);
  const callback = await signInAtProvider(start.url, login, CALLBACK);
  return { start, callback, finish: await oidc.finish(callback.search.slice(1), start.flow) };
}

test('the authorization URL asks for a code with PKCE (S256), a state, a nonce and the redirect URI under baseUrl', async (t) => {
  const { oidc, provider } = await setUp(t);
  const start = await oidc.begin();
  assert.ok(start.ok);
  assert.equal(start.url.origin, provider.issuer);
  const query = start.url.searchParams;
  assert.equal(query.get('response_type'), 'code');
  assert.equal(query.get('client_id'), provider.clientId);
  assert.equal(query.get('redirect_uri'), CALLBACK);
  assert.equal(query.get('code_challenge_method'), 'S256');
  assert.match(query.get('code_challenge') ?? '', /^[\w-]{43}$/);
  assert.match(query.get('state') ?? '', /^[\w-]{20,}$/);
  assert.match(query.get('nonce') ?? '', /^[\w-]{20,}$/);
  assert.equal(query.get('scope'), 'openid profile roles groups');
  // The verifier, state and nonce travel sealed: none of them is readable in the cookie.
  assert.ok(!start.flow.includes(query.get('state') ?? '-'));
  assert.equal(oidc.buttonLabel, 'Sign in with Test SSO');
});

test('an account whose roles claim holds a write value signs in with scope write and no profile limit', async (t) => {
  const { oidc } = await setUp(t);
  const { finish } = await signInAs(oidc, 'alice');
  assert.deepEqual(finish, { ok: true, grant: { subject: 'alice', scope: 'write', profiles: null } });
});

test('the widest scope wins, and a dotted claim name reaches into an object claim', async (t) => {
  const { oidc } = await setUp(t, { scopeClaim: 'realm_access.roles' });
  const { finish } = await signInAs(oidc, 'carol');
  assert.deepEqual(finish, { ok: true, grant: { subject: 'carol', scope: 'admin', profiles: null } });
});

test('an account whose claims grant no scope is refused with one line naming the claim', async (t) => {
  const { oidc } = await setUp(t, { scopeClaim: 'realm_access.roles' });
  const { finish } = await signInAs(oidc, 'bob');
  assert.deepEqual(finish, {
    ok: false,
    subject: 'bob',
    reason: 'Test SSO account "bob" may not use the console: no claim "realm_access.roles" grants a console scope.',
  });
});

test('a profiles mapping limits the session to the profiles its claim values name, and refuses an account it gives none', async (t) => {
  const { oidc } = await setUp(t, {
    profiles: { claim: 'groups', values: { 'vpn-employees': ['employees'], 'vpn-guests': ['guests'] } },
  });
  const alice = await signInAs(oidc, 'alice');
  assert.deepEqual(alice.finish, { ok: true, grant: { subject: 'alice', scope: 'write', profiles: ['employees'] } });
  const bob = await signInAs(oidc, 'bob');
  assert.deepEqual(bob.finish, {
    ok: false,
    subject: 'bob',
    reason: 'Test SSO account "bob" may not use the console: no value of claim "groups" grants a profile.',
  });
});

test("a callback is refused without the browser's own flow: no cookie, another flow's cookie, a used code, a flow older than ten minutes", async (t) => {
  const { oidc, clock } = await setUp(t);
  const { callback, start } = await signInAs(oidc, 'alice');
  const query = callback.search.slice(1);
  const missing = await oidc.finish(query, undefined);
  assert.deepEqual(missing, {
    ok: false,
    subject: null,
    reason: 'The sign-in took too long or was started in another browser; start it again.',
  });
  const forged = await oidc.finish(query, `${start.ok ? start.flow.slice(0, -4) : ''}AAAA`);
  assert.equal(forged.ok, false);
  const other = await oidc.begin();
  assert.ok(other.ok);
  const crossed = await oidc.finish(query, other.flow);
  assert.ok(!crossed.ok);
  assert.match(crossed.reason, /^Test SSO sign-in failed: .*state/);
  const replayed = await oidc.finish(query, start.ok ? start.flow : '');
  assert.ok(!replayed.ok, 'the code was used by the first finish');
  assert.match(replayed.reason, /^Test SSO sign-in failed: invalid_grant/);

  const late = await oidc.begin();
  assert.ok(late.ok);
  const lateCallback = await signInAtProvider(late.url, 'alice', CALLBACK);
  clock.at += OIDC_FLOW_LIFETIME_MS + 1_000;
  const tooLate = await oidc.finish(lateCallback.search.slice(1), late.flow);
  assert.deepEqual(tooLate, {
    ok: false,
    subject: null,
    reason: 'The sign-in took too long or was started in another browser; start it again.',
  });
});

test('an ID token whose signature the provider’s published keys do not verify is refused; the genuine one signs in', async (t) => {
  const { oidc, provider } = await setUp(t);
  provider.forgeIdTokens = true;
  const forged = (await signInAs(oidc, 'alice')).finish;
  assert.ok(!forged.ok);
  assert.equal(forged.subject, null);
  assert.match(forged.reason, /^Test SSO sign-in failed: .*signature/i);

  provider.forgeIdTokens = false;
  const genuine = (await signInAs(oidc, 'alice')).finish;
  assert.ok(genuine.ok, genuine.ok ? '' : genuine.reason);
});

test('a provider that answers with an error (access denied) is refused with its own words', async (t) => {
  const { oidc, provider } = await setUp(t);
  const start = await oidc.begin();
  assert.ok(start.ok);
  const state = start.url.searchParams.get('state') ?? '';
  const query = new URLSearchParams({
    error: 'access_denied',
    error_description: 'the user said no',
    state,
    iss: provider.issuer,
  });
  const finish = await oidc.finish(query.toString(), start.flow);
  assert.deepEqual(finish, {
    ok: false,
    subject: null,
    reason: 'Test SSO sign-in failed: access_denied: the user said no.',
  });
});

test('a provider that cannot be reached makes sign-in say so in one line, without the client secret', async (t) => {
  const { oidc, provider } = await setUp(t);
  await provider.close();
  const down = await oidc.begin();
  assert.ok(!down.ok);
  assert.match(down.reason, /^Test SSO cannot be reached \(.+\); sign in with an admin key\.$/);
  assert.ok(!down.reason.includes(provider.clientSecret));
});

test('a provider whose discovery document is larger than 1 MiB is refused after reading about 1 MiB, naming the limit', async (t) => {
  const endless = await startEndlessBody(200 * 1024 * 1024);
  t.after(() => endless.close());
  const dir = mkdtempSync(path.join(tmpdir(), 'console-oidc-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'client-secret'), 'secret\n');
  chmodSync(path.join(dir, 'client-secret'), 0o600);
  const settings = resolveConsoleOidc(
    {
      issuer: `${endless.url}/realm`,
      name: 'Huge SSO',
      clientId: 'portal',
      clientSecretFile: 'client-secret',
      requestScopes: ['openid'],
      signOutAtProvider: false,
      scope: { claim: 'roles', read: ['staff'], write: [], admin: [] },
    },
    BASE_URL,
    dir,
    ['employees'],
    (option, message) => assert.fail(`${option}: ${message}`),
  );
  const oidc = new ConsoleOidc(settings as ConsoleOidcSettings, new KeyStore(dir), new ClockAt());
  const start = await oidc.begin();
  assert.equal(start.ok, false);
  assert.match(start.ok ? '' : start.reason, /more than 1048576 bytes \(1 MiB, the limit\)/);
  const sent = await endless.closed();
  assert.ok(sent < 17 * 1024 * 1024, `the provider wrote ${sent} bytes before the portal hung up`);
});
