// A PostgreSQL server that refuses the portal's login stops `serve` with one line that names
// the database (password masked), the migrations it could not apply and the server's reason.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { runCli } from '../support/portal-process.js';
import { postgresServerUrl } from '../support/postgres.js';

test('a wrong PostgreSQL password stops serve with one line naming the cause, without the password', async (t) => {
  const url = new URL(postgresServerUrl());
  url.password = 'wrong-password-123';
  const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-pg-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'portal.json');
  writeFileSync(
    file,
    JSON.stringify({
      database: url.href,
      listen: { port: 0 },
      ProfileList: [
        { profileId: 'a', displayName: 'A', hostName: 'h', wRangeFour: '10.1.0.0/24', wRangeSix: 'fd01::/64' },
      ],
    }),
  );
  const result = await runCli(['serve', '--config', file]);
  assert.equal(result.code, 1);
  assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
  assert.match(
    result.stderr,
    /^database postgres:\/\/[^:]+:\*\*\*@.*: cannot apply the migrations \(0001-initial.*\): password authentication failed for user "[^"]+" \(28P01\)/,
  );
  assert.doesNotMatch(result.stderr + result.stdout, /wrong-password-123/);
});
