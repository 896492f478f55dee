// `adminConsole.oidc` is checked when the configuration loads, so a mistake refuses the start
// naming the option: an issuer that is not https (but for loopback), a client secret file that
// is missing, empty or readable by others, a mapping that grants nothing or names unknown profiles.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { resolveConsoleOidc, type ParsedConsoleOidc } from '../../src/config/console-oidc.js';

const BASE_URL = new URL('https://vpn.example.org/vpn-user-portal');

function resolved(raw: NonNullable<ParsedConsoleOidc>, secretMode = 0o600, secret = 's3cret-value\n') {
  const dir = mkdtempSync(path.join(tmpdir(), 'oidc-config-'));
  try {
    writeFileSync(path.join(dir, 'secret'), secret);
    chmodSync(path.join(dir, 'secret'), secretMode);
    const problems: string[] = [];
    const settings = resolveConsoleOidc(raw, BASE_URL, dir, ['staff', 'guests'], (option, message) =>
      problems.push(`${option}: ${message}`),
    );
    return { settings, problems };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const valid: NonNullable<ParsedConsoleOidc> = {
  issuer: 'https://login.example.org/realms/staff',
  clientId: 'vpn-console',
  clientSecretFile: 'secret',
  requestScopes: ['profile', 'openid', 'roles'],
  signOutAtProvider: false,
  scope: { claim: 'realm_access.roles', read: ['vpn-viewer'], write: [], admin: ['vpn-admin'] },
};

test('a valid option resolves: the secret read, openid asked for once and first, the redirect URI under baseUrl, the button named by the host', () => {
  const { settings, problems } = resolved(valid);
  assert.deepEqual(problems, []);
  assert.equal(settings?.clientSecret.reveal(), 's3cret-value');
  assert.equal(String(settings?.clientSecret), '[redacted]');
  assert.deepEqual(settings?.requestScopes, ['openid', 'profile', 'roles']);
  assert.equal(settings?.redirectUri.href, 'https://vpn.example.org/vpn-user-portal/admin/oidc/callback');
  assert.equal(settings?.postLogoutRedirectUri.href, 'https://vpn.example.org/vpn-user-portal/admin/sign-in');
  assert.equal(settings?.name, 'login.example.org');
  assert.equal(settings?.profiles, null);
});

test('each mistake is reported naming its option, and the secret never appears in a message', () => {
  const cases: [NonNullable<ParsedConsoleOidc>, number, string, string][] = [
    [
      { ...valid, issuer: 'http://login.example.org/' },
      0o600,
      's',
      'adminConsole.oidc.issuer: http://login.example.org/ must be https:// (http:// only on a loopback address)',
    ],
    [
      valid,
      0o640,
      'top-secret',
      'adminConsole.oidc.clientSecretFile: secret is readable by others (mode 0640); chmod 600 it',
    ],
    [valid, 0o600, ' \n', 'adminConsole.oidc.clientSecretFile: secret is empty'],
    [
      { ...valid, clientSecretFile: 'missing' },
      0o600,
      's',
      'adminConsole.oidc.clientSecretFile: cannot read missing (ENOENT)',
    ],
    [
      { ...valid, scope: { claim: 'roles', read: [], write: [], admin: [] } },
      0o600,
      's',
      'adminConsole.oidc.scope: no value grants any scope: list values under read, write or admin',
    ],
    [
      { ...valid, profiles: { claim: 'groups', values: { 'vpn-staff': ['staff', 'teachers'] } } },
      0o600,
      's',
      'adminConsole.oidc.profiles.values.vpn-staff: "teachers" is not a profile of ProfileList',
    ],
  ];
  for (const [raw, mode, secret, expected] of cases) {
    const { problems } = resolved(raw, mode, secret);
    assert.deepEqual(problems, [expected]);
  }
  assert.deepEqual(resolved({ ...valid, issuer: 'http://127.0.0.1:8080/' }).problems, [], 'loopback may be http');
});
