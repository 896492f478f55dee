// The README's quick start, read from README.md and run as written: `npm run quickstart` (the
// embedded default configuration in an empty folder: Admin API on 127.0.0.1:8080, metrics on
// 127.0.0.1:9466), then a WireGuard file handed out with the README's `vpn-portal admin`
// commands and with its curl command. Editing those lines changes what this test runs. It runs
// in a network namespace of its own, so that a quick start still running on this machine's
// 127.0.0.1:8080 (as the README leaves one) does not stand in its way.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { NetnsLab } from '../support/netns.js';
import { PortalProcess, runCli } from '../support/portal-process.js';

const root = new URL('../../', import.meta.url);

/** The `sh` blocks of the README's "Quick start" section, in order. */
function quickStartBlocks(): string[] {
  const readme = readFileSync(new URL('README.md', root), 'utf8');
  const section = readme.split(/^## /m).find((part) => part.startsWith('Quick start\n'));
  assert.ok(section !== undefined, 'README.md has a "Quick start" section');
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? '');
}

/** A block's commands without their comments, one per line. */
const commandsOf = (block: string): string[] =>
  block
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '');

test('the quick start: generate-secrets --admin-api and serve without a configuration, then admin create and the curl call', async (t) => {
  const [install, admin, curlBlock] = quickStartBlocks();
  assert.deepEqual(commandsOf(install ?? ''), ['npm ci && npm run quickstart', 'npm test']);
  // `npm run quickstart` is generate-secrets --admin-api, then serve: what runs below.
  const scripts = (
    JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { scripts: Record<string, string> }
  ).scripts;
  assert.equal(scripts['quickstart'], './dist/cli/main.js generate-secrets --admin-api && ./dist/cli/main.js serve');

  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-quickstart-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const secrets = await runCli(['generate-secrets', '--admin-api'], { cwd: directory });
  assert.equal(secrets.code, 0, secrets.stderr);
  assert.match(secrets.stdout, /created admin API secret: .*data\/keys\/admin-api\.key/);
  // Stands for a quick start left running on this machine's 8080 (when the port is free to take).
  const leftRunning = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => {
    leftRunning.once('error', () => resolve());
    leftRunning.listen(8080, '127.0.0.1', resolve);
  });
  t.after(() => leftRunning.close(() => {}));
  const lab = new NetnsLab();
  t.after(() => lab.cleanup());
  const host = await lab.namespace('quick');
  const netns = host.name;
  const portal = new PortalProcess(null, { cwd: directory, netns });
  t.after(() => portal.stop());
  assert.equal(await portal.ready(), 'http://127.0.0.1:8080');
  assert.ok(portal.lines.some((line) => line.msg === 'metrics at http://127.0.0.1:9466/metrics'));
  assert.ok(
    portal.lines.some(
      (line) =>
        line.msg ===
        'admin API at http://127.0.0.1:8080/vpn-user-portal/admin/api/v1/ (listening on http://127.0.0.1:8080)',
    ),
  );

  // `npm link` puts this clone's vpn-portal on the PATH; runCli runs the same dist/cli/main.js.
  const [link, ...adminLines] = commandsOf(admin ?? '');
  assert.equal(link, 'npm link');
  const [create, users] = adminLines.map((line) => {
    assert.match(line, /^vpn-portal /);
    return line.replace(/^vpn-portal /, '').split(/\s+/);
  });
  assert.deepEqual(create, ['admin', 'create', 'alice', 'default', '-o', 'alice.conf']);
  const created = await runCli(create ?? [], { cwd: directory, netns });
  assert.equal(created.code, 0, created.stderr);
  assert.match(
    readFileSync(path.join(directory, 'alice.conf'), 'utf8'),
    /^\[Interface\]\nPrivateKey = .*\nAddress = 10\.43\.43\.2\/24,fd43::2\/64$/m,
  );
  assert.deepEqual(users, ['admin', 'users']);
  assert.equal((await runCli(users ?? [], { cwd: directory, netns })).stdout, 'USER   DIRECTORY\nalice\n');

  assert.match(curlBlock ?? '', /^curl -s -H "Authorization: Bearer \$\(cat data\/keys\/admin-api\.key\)" /);
  const curl = await host.exec('bash', ['-c', `cd ${directory} && ${curlBlock ?? ''}`]);
  assert.match(curl.stdout, /^\[Interface\]\nPrivateKey = /);
  assert.match(curl.stdout, /^Address = 10\.43\.43\.3\/24,fd43::3\/64$/m);
});
