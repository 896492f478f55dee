// `vpn-portal admin-key create|list|rotate|revoke` and `vpn-portal admin audit`, run as an
// administrator runs them (a process of their own) next to a running portal on the same
// database and data directory: the key is shown once and stored only as a keyed hash, takes
// effect on the portal at once, create, rotate and revoke are audit rows of their own (and drop
// the kept answers that handed out the keys they end), and the audit log is read through the
// Admin API.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ADMIN_KEY_PATTERN } from '../../src/keys/admin-key-token.js';
import type { Clock } from '../../src/shared/time.js';
import { ManualClock } from '../support/admin-keys.js';
import { runCli, type CliResult } from '../support/portal-process.js';
import { defaultTestConfig, startTestPortal, type TestPortal } from '../support/test-portal.js';

interface Setup {
  readonly portal: TestPortal;
  readonly configFile: string;
  cli(...args: string[]): Promise<CliResult>;
}

async function setUp(t: { after: (fn: () => Promise<void> | void) => void }, clock?: Clock): Promise<Setup> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-admin-key-'));
  const portal = await startTestPortal({ dataDir, ...(clock === undefined ? {} : { clock }) });
  t.after(async () => {
    await portal.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const configFile = path.join(dataDir, 'portal.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      ...defaultTestConfig,
      baseUrl: `${portal.portal.url}/vpn-user-portal/`,
      dataDir,
      database: portal.database,
    }),
  );
  return { portal, configFile, cli: (...args) => runCli([...args, '--config', configFile]) };
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** A write key for profile employees, 90 days, from loopback only. */
const CREATE_MDM = [
  'admin-key',
  'create',
  '--name',
  'mdm',
  '--scope',
  'write',
  '--profile',
  'employees',
  '--expires-in',
  'P90D',
  '--allow',
  '127.0.0.0/8',
];

/** The last line of the output: where a new key is printed, alone. */
function lastLine(output: string): string {
  return output.trimEnd().split('\n').at(-1) ?? '';
}

test('admin-key create prints the key once, alone on its last line; the portal accepts it at once and stores only a keyed hash', async (t) => {
  const { portal, cli } = await setUp(t);
  const created = await cli(...CREATE_MDM);
  assert.equal(created.code, 0, created.stderr);
  const key = lastLine(created.stdout);
  assert.match(key, ADMIN_KEY_PATTERN, 'a vpa_ key with id, secret and checksum');
  assert.match(
    created.stdout,
    /^created admin key "mdm" \(id \w{12}\): scope write; profiles employees; only from 127\.0\.0\.0\/8; expires \d{4}-/m,
  );
  assert.equal(created.stdout.split(key).length, 2, 'the key appears once');

  const users = await portal.get('/users', {}, bearer(key));
  assert.equal(users.status, 200, users.text);
  const rows = await portal.portal.ctx.db.selectFrom('admin_keys').selectAll().execute();
  assert.equal(rows.length, 1);
  assert.equal(JSON.stringify(rows).includes(key.slice(17, 60)), false, 'the secret part is nowhere in the database');
  assert.match(rows[0]?.secret_hash ?? '', /^[0-9a-f]{64}$/);

  const keyDir = path.join(portal.dataDir, 'keys');
  assert.equal(statSync(path.join(keyDir, 'admin-keys.pepper')).mode & 0o777, 0o600);
  assert.equal(statSync(keyDir).mode & 0o777, 0o700);

  const list = await cli('admin-key', 'list');
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^NAME +ID +SCOPE +PROFILES +ALLOW +CREATED +EXPIRES +LAST USED +LAST ADDRESS +STATE$/m);
  assert.match(
    list.stdout,
    /^mdm +\w{12} +write +employees +127\.0\.0\.0\/8 +\d{4}-\S+ +\d{4}-\S+ +\d{4}-\S+ +127\.0\.0\.1 +active$/m,
    'last used and from where',
  );
  assert.equal(list.stdout.includes(key), false, 'list never shows a key');
  const json = await cli('admin-key', 'list', '--json');
  const entry = JSON.parse(lastLine(json.stdout)) as Record<string, unknown>;
  assert.deepEqual(
    {
      name: entry['name'],
      scope: entry['scope'],
      profiles: entry['profiles'],
      allow: entry['allow'],
      state: entry['state'],
    },
    { name: 'mdm', scope: 'write', profiles: ['employees'], allow: ['127.0.0.0/8'], state: 'active' },
  );
});

test('admin-key create refuses a taken name, an unknown profile, a bad duration, scope or prefix, and changes nothing', async (t) => {
  const { portal, cli } = await setUp(t);
  assert.equal((await cli('admin-key', 'create', '--name', 'mdm')).code, 0);
  const cases: [string[], RegExp][] = [
    [['--name', 'mdm'], /a key named "mdm" exists already: rotate it/],
    [['--name', 'x', '--profile', 'nope'], /--profile: there is no profile "nope" \(profiles: employees\)/],
    [['--name', 'x', '--expires-in', '90 days'], /--expires-in: "90 days" is not an ISO 8601 duration/],
    [['--name', 'x', '--expires-in', 'P8000Y'], /--expires-in: "P8000Y" is longer than P100Y/],
    [['--name', 'x', '--expires-in', 'P999999999Y'], /--expires-in: "P999999999Y" is longer than P100Y/],
    [
      ['--name', 'x', '--expires-in', 'PT99999999999999999999S'],
      /--expires-in: "PT99999999999999999999S" is longer than P100Y/,
    ],
    [['--name', 'x', '--scope', 'root'], /--scope: "root" is not one of read, write, admin, scim/],
    [
      ['--name', 'x', '--scope', 'scim', '--profile', 'employees'],
      /a scim key acts on whole users and cannot be limited to profiles/,
    ],
    [['--name', 'x', '--allow', '10.0.0.0/33'], /--allow: "10\.0\.0\.0\/33" is not an IP prefix/],
    [['--name', 'secret'], /"secret" names the specification's secret/],
    [['--name', 'x y'], /--name: "x y" must be 1–64 of/],
  ];
  for (const [args, message] of cases) {
    const result = await cli('admin-key', 'create', ...args);
    assert.equal(result.code, 2, `${args.join(' ')}: ${result.stdout}${result.stderr}`);
    assert.match(result.stderr, message);
    assert.equal(result.stdout.includes('vpa_'), false, 'no key printed');
  }
  assert.equal(
    (await portal.portal.ctx.db.selectFrom('admin_keys').selectAll().execute()).length,
    1,
    'only the first key was stored',
  );
});

test('admin-key create --scope scim makes a key the SCIM endpoint takes and the Admin API refuses', async (t) => {
  const { portal, cli } = await setUp(t);
  const made = await cli('admin-key', 'create', '--name', 'entra', '--scope', 'scim');
  assert.equal(made.code, 0, made.stderr);
  const key = lastLine(made.stdout);
  assert.match(key, ADMIN_KEY_PATTERN);
  const scim = await fetch(`${portal.portal.url}/vpn-user-portal/scim/v2/Users`, { headers: bearer(key) });
  assert.equal(scim.status, 200, await scim.text());
  assert.equal((await portal.get('/users', {}, bearer(key))).status, 403);
});

test('admin-key rotate refuses a grace period or a lifetime longer than P100Y, and changes nothing', async (t) => {
  const { portal, cli } = await setUp(t);
  assert.equal((await cli('admin-key', 'create', '--name', 'monitor', '--scope', 'read')).code, 0);
  const cases: [string[], RegExp][] = [
    [['--grace', 'P999999999Y'], /--grace: "P999999999Y" is longer than P100Y/],
    [['--grace', 'PT99999999999999999999S'], /--grace: "PT99999999999999999999S" is longer than P100Y/],
    [['--expires-in', 'P8000Y'], /--expires-in: "P8000Y" is longer than P100Y/],
    [['--expires-in', 'P999999999Y'], /--expires-in: "P999999999Y" is longer than P100Y/],
  ];
  for (const [args, message] of cases) {
    const result = await cli('admin-key', 'rotate', 'monitor', ...args);
    assert.equal(result.code, 2, `${args.join(' ')}: ${result.stdout}${result.stderr}`);
    assert.match(result.stderr, message);
    assert.equal(result.stdout.includes('vpa_'), false, 'no key printed');
  }
  assert.equal(
    (await portal.portal.ctx.db.selectFrom('admin_keys').selectAll().execute()).length,
    1,
    'nothing was rotated',
  );
});

test('admin-key rotate gives a new key at once and keeps the old one for the grace period; revoke ends them all at once', async (t) => {
  const { portal, cli } = await setUp(t);
  const first = lastLine((await cli('admin-key', 'create', '--name', 'monitor', '--scope', 'read')).stdout);
  const rotated = await cli('admin-key', 'rotate', 'monitor', '--grace', 'PT1H');
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.match(
    rotated.stdout,
    /^rotated admin key "monitor": the old key works until \d{4}-\S+; the new one \(id \w{12}\): scope read;/m,
  );
  const second = lastLine(rotated.stdout);
  assert.match(second, ADMIN_KEY_PATTERN);
  assert.notEqual(second, first);
  assert.equal(
    (await portal.get('/users', {}, bearer(first))).status,
    200,
    'the old key still works during the grace period',
  );
  assert.equal((await portal.get('/users', {}, bearer(second))).status, 200, 'the new key works at once');

  const third = lastLine((await cli('admin-key', 'rotate', 'monitor', '--grace', 'PT0S')).stdout);
  assert.equal(
    (await portal.get('/users', {}, bearer(second))).status,
    401,
    'without a grace period the rotated-out key stops at once',
  );
  assert.equal(
    (await portal.get('/users', {}, bearer(first))).status,
    200,
    'an earlier key keeps its own grace period',
  );
  assert.equal((await portal.get('/users', {}, bearer(third))).status, 200);

  const beforeRevoke = await cli('admin-key', 'list');
  assert.match(beforeRevoke.stdout, / rotated out$/m, 'list shows the key whose grace period ended');
  assert.match(beforeRevoke.stdout, / rotated, valid until \d{4}-\S+$/m, 'and the one still in its grace period');

  const revoked = await cli('admin-key', 'revoke', 'monitor');
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.match(
    revoked.stdout,
    /^revoked 3 key\(s\) named "monitor"/m,
    'the current key, the one in its grace period and the one past it',
  );
  for (const key of [first, second, third]) assert.equal((await portal.get('/users', {}, bearer(key))).status, 401);
  const again = await cli('admin-key', 'revoke', 'monitor');
  assert.equal(again.code, 2);
  assert.match(again.stderr, /there is no key named "monitor" that is not revoked already/);
  const list = await cli('admin-key', 'list');
  assert.equal(list.stdout.match(/ revoked \d{4}-/g)?.length, 3, 'list shows the revoked keys as revoked');
});

test('admin-key rotate and revoke drop the kept create_admin_key answers of the keys they end, so a retry never gets their secret', async (t) => {
  const { portal, cli } = await setUp(t);
  const make = (name: string) =>
    portal.post('/create_admin_key', { name, scope: 'read' }, { 'idempotency-key': `make-${name}` });
  const states = async () =>
    Object.fromEntries(
      (
        await portal.portal.ctx.db
          .selectFrom('idempotency_records')
          .select(['idempotency_key', 'state'])
          .orderBy('idempotency_key')
          .execute()
      ).map((row) => [row.idempotency_key, row.state]),
    );
  for (const name of ['rotated', 'revoked', 'kept']) assert.equal((await make(name)).status, 200, name);
  assert.equal((await cli('admin-key', 'rotate', 'rotated', '--grace', 'PT1H')).code, 0);
  assert.equal((await cli('admin-key', 'revoke', 'revoked')).code, 0);
  assert.deepEqual(await states(), { 'make-kept': 'done', 'make-revoked': 'revoked', 'make-rotated': 'replaced' });
  for (const name of ['rotated', 'revoked']) assert.equal((await make(name)).status, 410, name);
});

test('vpn-portal admin audit reads the audit log through the Admin API with the secret, or with an admin key from a key file', async (t) => {
  // The portal's clock stands still, so the refusals below fall in one minute.
  const { portal, cli, configFile } = await setUp(t, new ManualClock());
  assert.equal(
    (await portal.post('/create', { user_id: 'alice', profile_id: 'employees', display_name: 'Laptop' })).status,
    200,
  );
  assert.equal((await portal.post('/disable_user', { user_id: 'alice' })).status, 204);

  const audit = await cli('admin', 'audit', '--url', `${portal.portal.url}/vpn-user-portal/`);
  assert.equal(audit.code, 0, audit.stderr);
  const [header, ...rows] = audit.stdout.trimEnd().split('\n');
  assert.match(header ?? '', /^AT +KEY +FROM +CALL +STATUS +REPEATED +USER +CONNECTIONS +PARAMETERS +DETAIL$/);
  assert.equal(rows.length, 2, audit.stdout);
  assert.match(rows[0] ?? '', /^\d{4}-\d\d-\d\dT\S+ +secret +127\.0\.0\.1 +disable_user +204 +alice *$/);
  assert.match(
    rows[1] ?? '',
    /^\S+ +secret +127\.0\.0\.1 +create +200 +alice +\S{44} +profile_id="employees" display_name="Laptop" *$/,
  );
  assert.equal(audit.stdout.includes(portal.secret), false, 'the key used is never printed');

  const json = await cli('admin', 'audit', '--json', '--limit', '1', '--url', `${portal.portal.url}/vpn-user-portal/`);
  const page = JSON.parse(json.stdout) as { audit_log: { call: string }[]; next_cursor: string | null };
  assert.deepEqual(
    page.audit_log.map((entry) => entry.call),
    ['disable_user'],
  );
  assert.notEqual(page.next_cursor, null, 'a cursor to the older entry');

  const readKey = lastLine((await cli('admin-key', 'create', '--name', 'helpdesk', '--scope', 'read')).stdout);
  const keyFile = path.join(path.dirname(configFile), 'helpdesk.key');
  writeFileSync(keyFile, `${readKey}\n`, { mode: 0o600 });
  const refused = await cli('admin', 'audit', '--key-file', keyFile, '--url', `${portal.portal.url}/vpn-user-portal/`);
  assert.equal(refused.code, 1);
  assert.equal(
    refused.stderr.trim(),
    'vpn-portal admin: 403 key "helpdesk" has scope "read"; audit_log needs scope "admin"',
  );
  assert.equal(`${refused.stdout}${refused.stderr}`.includes(readKey), false);
  const listed = await cli('admin', 'users', '--key-file', keyFile, '--url', `${portal.portal.url}/vpn-user-portal/`);
  assert.equal(listed.code, 0, `a read key lists: ${listed.stderr}`);

  // Refusals of one source and reason within a minute are one row; the table shows the count.
  for (let index = 0; index < 2; index++)
    assert.equal((await portal.get('/audit_log', {}, bearer(readKey))).status, 403);
  const latest = await cli(
    'admin',
    'audit',
    '--key-name',
    'helpdesk',
    '--url',
    `${portal.portal.url}/vpn-user-portal/`,
  );
  assert.match(
    latest.stdout.trimEnd().split('\n')[1] ?? '',
    /^\S+ +helpdesk +127\.0\.0\.1 +audit_log +403 +\+2 +key "helpdesk" has scope "read"/,
  );
});

test('admin-key create, rotate and revoke are in the audit log as the command line, from local, with their options and never a key', async (t) => {
  const { portal, cli } = await setUp(t);
  const created = await cli(...CREATE_MDM, '--allow', '::1/128');
  assert.equal(created.code, 0, created.stderr);
  const rotated = await cli('admin-key', 'rotate', 'mdm', '--grace', 'PT5M', '--expires-in', 'P30D');
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.equal((await cli('admin-key', 'revoke', 'mdm')).code, 0);
  assert.equal((await cli('admin-key', 'revoke', 'mdm')).code, 2, 'nothing left to revoke: no change, no row');
  assert.equal((await cli('admin-key', 'create', '--name', 'reader')).code, 0);
  assert.equal((await cli('admin-key', 'list')).code, 0);

  const page = await portal.admin.auditLog({});
  assert.deepEqual(
    page.audit_log.reverse().map((entry) => ({ ...entry, id: 'id', at: 'at' })),
    [
      {
        call: 'admin-key create',
        parameters: {
          name: 'mdm',
          scope: 'write',
          profiles: 'employees',
          expires_in: 'P90D',
          allow_list: '127.0.0.0/8,::1/128',
        },
      },
      { call: 'admin-key rotate', parameters: { name: 'mdm', grace: 'PT5M', expires_in: 'P30D' } },
      { call: 'admin-key revoke', parameters: { name: 'mdm' } },
      { call: 'admin-key create', parameters: { name: 'reader', scope: 'read' } },
    ].map((expected) => ({
      id: 'id',
      at: 'at',
      key_name: '(command line)',
      source_address: 'local',
      status: 200,
      user_id: null,
      connection_ids: [],
      detail: null,
      repeated: 0,
      ...expected,
    })),
    'one row per change, with the options given; list and a refused revoke change nothing',
  );
  const everything = JSON.stringify(await portal.portal.ctx.db.selectFrom('audit_log').selectAll().execute());
  const hashes = (await portal.portal.ctx.db.selectFrom('admin_keys').select('secret_hash').execute()).map(
    (row) => row.secret_hash,
  );
  for (const secret of [lastLine(created.stdout), lastLine(rotated.stdout), ...hashes]) {
    assert.equal(everything.includes(secret), false, `never in the audit log: ${secret.slice(0, 12)}…`);
  }
});
