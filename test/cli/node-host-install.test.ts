// A node host needs no C compiler: the database drivers (better-sqlite3 builds native code, and
// pg) are optional dependencies that only `serve` loads, so `npm ci --omit=optional` installs
// a working node agent. Here the program runs from a copy whose node_modules lacks both
// drivers: the agent serves a real device, the admin client works, and `serve` says in one
// line what is missing.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { NodeAgentProcess } from '../support/node-agent-process.js';
import { startTunnelLab } from '../support/tunnel-lab.js';
import { hostExec } from '../support/netns.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DRIVERS = /^(better-sqlite3|pg|pg-.*|@types)$/;

/** The program and its dependencies, minus the database drivers. */
function copyWithoutDrivers(t: { after: (fn: () => void) => void }): string {
  const copy = mkdtempSync(path.join(tmpdir(), 'vpn-portal-node-host-'));
  t.after(() => rmSync(copy, { recursive: true, force: true }));
  cpSync(path.join(ROOT, 'src'), path.join(copy, 'src'), { recursive: true });
  cpSync(path.join(ROOT, 'package.json'), path.join(copy, 'package.json'));
  mkdirSync(path.join(copy, 'node_modules'));
  for (const name of readdirSync(path.join(ROOT, 'node_modules'))) {
    if (DRIVERS.test(name) || name.startsWith('.')) continue;
    symlinkSync(path.join(ROOT, 'node_modules', name), path.join(copy, 'node_modules', name));
  }
  return copy;
}

test('package.json keeps the database drivers optional, so npm ci --omit=optional leaves them out', () => {
  const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Record<
    string,
    Record<string, string>
  >;
  assert.deepEqual(Object.keys(manifest['optionalDependencies'] ?? {}).sort(), ['better-sqlite3', 'pg']);
  assert.equal(manifest['dependencies']?.['better-sqlite3'], undefined);
  assert.equal(manifest['dependencies']?.['pg'], undefined);
});

test('without better-sqlite3 and pg the node agent runs and serves a device, and serve names the missing driver', async (t) => {
  const copy = copyWithoutDrivers(t);
  const main = path.join(copy, 'src', 'cli', 'main.ts');
  for (const driver of ['better-sqlite3', 'pg']) {
    const probe = await hostExec('bash', [
      '-c',
      `cd ${copy} && ${process.execPath} --input-type=module -e "import('${driver}').then(() => console.log('present'), () => console.log('absent'))"`,
    ]);
    assert.equal(probe.stdout.trim(), 'absent', `${driver} cannot be loaded from the copy`);
  }

  const lab = await startTunnelLab({ startAgent: false });
  t.after(lab.close);
  const agent = new NodeAgentProcess(lab.node, path.join(lab.directory, 'node.json'), main);
  t.after(() => agent.stop());
  await agent.ready();
  await lab.portal.reconcile();
  await lab.provisionDevice('alice', 'laptop');
  assert.ok(await lab.ping(10), 'a device reaches the node served by the driver-less agent');

  const serve = await hostExec('bash', [
    '-c',
    `cd ${copy} && ${process.execPath} --import tsx src/cli/main.ts serve; echo "exit=$?"`,
  ]);
  // The storage module imports both drivers; which missing one the loader reports first depends on
  // its resolution order (one loaded CI run named pg), so either name is the right answer.
  assert.match(serve.stderr, /^the database driver (better-sqlite3|pg) is not installed/);
  assert.equal(serve.stderr.trim().split('\n').length, 1, serve.stderr);
  assert.match(serve.stdout, /exit=1/);
  const version = await hostExec('bash', [
    '-c',
    `cd ${copy} && ${process.execPath} --import tsx src/cli/main.ts --version`,
  ]);
  assert.match(version.stdout, /^vpn-portal \d+\.\d+\.\d+/);
});
