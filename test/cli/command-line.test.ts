// Command-line manners: `--version`, every command's own `--help`, the usage on an unknown flag,
// and one line naming the cause (never a stack trace) when the portal cannot start: a
// database that does not answer, a port in use, a node secret for a node that is not configured.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { SERVE_USAGE } from '../../src/cli/usage.js';
import { runCli } from '../support/portal-process.js';

const PROFILE = {
  profileId: 'employees',
  displayName: 'Employees',
  hostName: 'vpn.example.org',
  wRangeFour: '10.44.0.0/24',
  wRangeSix: 'fd44::/64',
};

function configFile(
  t: { after: (fn: () => void) => void },
  document: Record<string, unknown>,
): { file: string; dir: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'portal.json');
  writeFileSync(file, JSON.stringify({ ProfileList: [PROFILE], ...document }));
  return { file, dir };
}

function assertNoStackTrace(text: string): void {
  assert.doesNotMatch(text, /\n\s+at /, `no stack trace in:\n${text}`);
}

test('--version prints the version of package.json', async () => {
  const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  const result = await runCli(['--version']);
  assert.equal(result.code, 0);
  assert.equal(result.stdout.trim(), `vpn-portal ${version}`);
});

test('serve, node and db --help print the usage of that command only', async () => {
  for (const [command, first] of [
    ['serve', 'usage: vpn-portal serve'],
    ['node', 'usage: vpn-portal node'],
    ['db', 'usage: vpn-portal db'],
    ['generate-secrets', 'usage: vpn-portal generate-secrets'],
  ] as const) {
    const result = await runCli([command, '--help']);
    assert.equal(result.code, 0, command);
    assert.ok(result.stdout.startsWith(first), `${command} --help: ${result.stdout}`);
    assert.doesNotMatch(result.stdout, /node-reset N/, `${command} --help shows no other command`);
  }
});

test('an unknown flag is named with the nearest option, then the usage of the command, with exit code 2', async () => {
  const serve = await runCli(['serve', '--bogus']);
  assert.equal(serve.code, 2);
  assert.equal(serve.stderr, `unknown option --bogus\n${SERVE_USAGE}\n`);
  const db = await runCli(['db', 'status', '--confg', 'portal.json']);
  assert.equal(db.code, 2);
  assert.match(db.stderr, /^unknown option --confg \(did you mean --config\?\)\nusage: vpn-portal db/);
  const adminKey = await runCli(['admin-key', 'create', '--name', 'x', '--expire-in', 'P1D']);
  assert.equal(adminKey.code, 2);
  assert.match(
    adminKey.stderr,
    /^unknown option --expire-in \(did you mean --expires-in\?\)\nusage: vpn-portal admin-key/,
  );
  assert.doesNotMatch(serve.stderr + db.stderr + adminKey.stderr, /positional argument/);
});

test('a mistyped command names the nearest command, then a short usage, with exit code 2', async () => {
  const serve = await runCli(['serv']);
  assert.equal(serve.code, 2);
  assert.match(serve.stderr, /^unknown command "serv" \(did you mean serve\?\)\nusage: vpn-portal COMMAND/);
  const nothingClose = await runCli(['frobnicate']);
  assert.equal(nothingClose.code, 2);
  assert.match(nothingClose.stderr, /^unknown command "frobnicate"\nusage: vpn-portal COMMAND/);

  const admin = await runCli(['admin', 'user']);
  assert.equal(admin.code, 2);
  assert.match(
    admin.stderr,
    /^vpn-portal admin: unknown admin command "user" \(did you mean users\?\)\nusage: vpn-portal admin COMMAND/,
  );
  assert.ok(admin.stderr.trimEnd().split('\n').length <= 12, `a short usage:\n${admin.stderr}`);
  assert.match(admin.stderr, /vpn-portal admin --help/, 'it says where the whole usage is');
  const webhook = await runCli(['admin', 'webhook', 'lst']);
  assert.equal(webhook.code, 2);
  assert.match(
    webhook.stderr,
    /^vpn-portal admin: unknown admin command "webhook lst" \(did you mean webhook list\?\)\n/,
  );

  for (const [args, expected] of [
    [['db', 'migrat'], /^unknown db command "migrat" \(did you mean migrate\?\)\nusage: vpn-portal db/],
    [['admin-key', 'lst'], /^unknown admin-key command "lst" \(did you mean list\?\)\nusage: vpn-portal admin-key/],
    [['mdm', 'snyc', '--dry-run'], /^unknown mdm command "snyc" \(did you mean sync\?\)\nusage: vpn-portal mdm/],
  ] as const) {
    const result = await runCli(args);
    assert.equal(result.code, 2, args.join(' '));
    assert.match(result.stderr, expected);
  }
});

test('an unreachable PostgreSQL server stops serve with one line naming the database, the migrations and the cause', async (t) => {
  const { file } = configFile(t, { database: 'postgres://vpn:very-secret@127.0.0.1:1/vpn', listen: { port: 0 } });
  const result = await runCli(['serve', '--config', file]);
  assert.equal(result.code, 1);
  assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
  assert.match(
    result.stderr,
    /^database postgres:\/\/vpn:\*\*\*@127\.0\.0\.1:1\/vpn: cannot apply the migrations \(0001-initial, .*\): .*ECONNREFUSED/,
  );
  assert.doesNotMatch(result.stderr + result.stdout, /very-secret/);
  assertNoStackTrace(result.stderr);
});

test('a port in use stops serve with one line naming the address', async (t) => {
  const blocker = createServer();
  blocker.listen(0, '127.0.0.1');
  await once(blocker, 'listening');
  t.after(() => blocker.close());
  const address = blocker.address();
  assert.ok(address !== null && typeof address === 'object');
  const { file } = configFile(t, { listen: { host: '127.0.0.1', port: address.port } });
  const result = await runCli(['serve', '--config', file]);
  assert.equal(result.code, 1);
  assert.equal(
    result.stderr.trim(),
    `cannot listen on 127.0.0.1:${address.port}: the address is already in use by another program (EADDRINUSE)`,
  );
});

test('generate-secrets --node for a node no profile runs on is an error and creates nothing', async (t) => {
  const { file, dir } = configFile(t, {});
  const result = await runCli(['generate-secrets', '--node', '5', '--config', file]);
  assert.equal(result.code, 2);
  assert.match(
    result.stderr,
    /generate-secrets --node 5: no profile of .*portal\.json runs on node 5 \(configured nodes: 0\)/,
  );
  assert.equal(existsSync(path.join(dir, 'data', 'keys', 'node.5.key')), false);
  const configured = await runCli(['generate-secrets', '--node', '0', '--config', file]);
  assert.equal(configured.code, 0, configured.stderr);
  assert.ok(existsSync(path.join(dir, 'data', 'keys', 'node.0.key')));
});

test('generate-secrets run as another user than the owner of the key folder says so in one line, not with a stack trace', async (t) => {
  // The administrator forgot "sudo -u vpn-portal": the keys belong to the portal's user (root here).
  const { file, dir } = configFile(t, { dataDir: 'data' });
  chmodSync(dir, 0o755);
  chmodSync(file, 0o644);
  const keyDir = path.join(dir, 'data', 'keys');
  mkdirSync(keyDir, { recursive: true, mode: 0o700 });
  chmodSync(path.join(dir, 'data'), 0o755);
  const nobody = {
    uid: Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' })),
    gid: Number(execFileSync('id', ['-g', 'nobody'], { encoding: 'utf8' })),
  };
  const result = await runCli(['generate-secrets', '--config', file], { user: nobody });
  assert.equal(result.code, 1, result.stderr);
  assert.equal(
    result.stderr,
    `cannot chmod ${keyDir}: operation not permitted (EPERM); run vpn-portal as the user that owns it (the portal's user)\n`,
  );
  assert.deepEqual(readdirSync(keyDir), [], 'no key was made');
});

test('admin-key, node-reset and db migrate|status without --config refuse when ./data holds no database, and create nothing', async (t) => {
  const cwd = mkdtempSync(path.join(tmpdir(), 'vpn-portal-no-config-'));
  t.after(() => rmSync(cwd, { recursive: true, force: true }));
  for (const args of [
    ['admin-key', 'create', '--name', 'mdm1', '--scope', 'write'],
    ['admin-key', 'list'],
    ['admin-key', 'revoke', 'mdm1'],
    ['node-reset', '0'],
    ['db', 'migrate'],
    ['db', 'status'],
  ]) {
    const result = await runCli(args, { cwd });
    assert.equal(result.code, 2, args.join(' '));
    assert.equal(result.stderr, 'no portal database in ./data (pass --config FILE)\n', args.join(' '));
    assert.equal(existsSync(path.join(cwd, 'data')), false, `${args.join(' ')} made no data folder`);
  }
  // Once a portal's database is in ./data (serve makes it; here db migrate with a configuration naming it), they work there.
  writeFileSync(path.join(cwd, 'portal.json'), JSON.stringify({ dataDir: './data', ProfileList: [PROFILE] }));
  assert.equal((await runCli(['db', 'migrate', '--config', 'portal.json'], { cwd })).code, 0);
  assert.equal((await runCli(['db', 'status'], { cwd })).code, 0);
  const created = await runCli(['admin-key', 'create', '--name', 'mdm1'], { cwd });
  assert.equal(created.code, 0, created.stderr);
});
