// The README's quick start, exactly as written: the embedded default configuration in an empty
// folder (Admin API on 127.0.0.1:8080, metrics on 127.0.0.1:9466), then a WireGuard file
// handed out with `vpn-portal admin` and with the README's curl command.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { hostExec } from '../support/netns.js';
import { PortalProcess, runCli } from '../support/portal-process.js';

test('the quick start: generate-secrets --admin-api and serve without a configuration, then admin create and the curl call', async (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-quickstart-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const secrets = await runCli(['generate-secrets', '--admin-api'], { cwd: directory });
  assert.equal(secrets.code, 0, secrets.stderr);
  assert.match(secrets.stdout, /created admin API secret: .*data\/keys\/admin-api\.key/);
  const portal = new PortalProcess(null, { cwd: directory });
  t.after(() => portal.stop());
  assert.equal(await portal.ready(), 'http://127.0.0.1:8080');
  assert.ok(portal.lines.some((line) => line.msg === 'metrics at http://127.0.0.1:9466/metrics'));
  assert.ok(portal.lines.some((line) => line.msg === 'admin API at http://127.0.0.1:8080/vpn-user-portal/admin/api/v1/ (listening on http://127.0.0.1:8080)'));

  const created = await runCli(['admin', 'create', 'alice', 'default', '-o', 'alice.conf'], { cwd: directory });
  assert.equal(created.code, 0, created.stderr);
  assert.match(readFileSync(path.join(directory, 'alice.conf'), 'utf8'), /^\[Interface\]\nPrivateKey = .*\nAddress = 10\.43\.43\.2\/24,fd43::2\/64$/m);
  assert.equal((await runCli(['admin', 'users'], { cwd: directory })).stdout, 'USER\nalice\n');

  const curl = await hostExec('bash', [
    '-c',
    `cd ${directory} && curl -s -H "Authorization: Bearer $(cat data/keys/admin-api.key)" \\
     -H "Accept: application/x-wireguard-profile" \\
     -d user_id=alice -d profile_id=default \\
     http://127.0.0.1:8080/vpn-user-portal/admin/api/v1/create`,
  ]);
  assert.match(curl.stdout, /^\[Interface\]\nPrivateKey = /);
  assert.match(curl.stdout, /^Address = 10\.43\.43\.3\/24,fd43::3\/64$/m);
});
