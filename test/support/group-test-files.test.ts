// The grouping of test files into shared test processes, where it could lose a test: every
// file given runs exactly once (alone or through one group), the files that need a process of
// their own keep one, and two passes side by side never overwrite each other's groups.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = 'test/support/group-test-files.mjs';

/** The compiled test files a list of entries runs: a group's imports, or the entry itself. */
async function filesRun(build: string, entries: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const entry of entries) {
    if (!path.basename(entry).startsWith('.group-')) {
      files.push(path.relative(build, entry));
      continue;
    }
    const text = await readFile(entry, 'utf8');
    for (const match of text.matchAll(/import '(.*)';/g)) {
      files.push(path.relative(build, path.resolve(path.dirname(entry), match[1] ?? '')));
    }
  }
  return files.sort();
}

async function group(build: string, pass: string, files: readonly string[]): Promise<string[]> {
  const { stdout } = await run(process.execPath, [SCRIPT, build, pass, ...files]);
  return stdout.split('\n').filter((line) => line !== '');
}

test('every test file runs once, the ones that need their own process alone and first, and two passes keep their groups apart', async (t) => {
  const build = await mkdtemp(path.join(tmpdir(), 'vpt-groups-'));
  t.after(() => rm(build, { recursive: true, force: true }));
  const files = [
    'test/http/admin-api/smoke.test.ts',
    'test/http/admin-api/users.test.ts',
    'test/http/console/console.test.ts',
    'test/storage/sqlite-driver.test.ts',
    'test/storage/postgres-scale-out.test.ts',
    'test/e2e/wireguard-tunnel.test.ts',
    'test/cli/engines.test.ts',
    'test/portal.test.ts',
    'test/tools/function-length.test.ts',
  ];

  const sqlite = await group(build, 'sqlite', files);
  const postgres = await group(build, 'postgres', files.slice(0, 5));

  const compiled = (file: string) => file.replace(/\.ts$/, '.js');
  assert.deepEqual(await filesRun(build, sqlite), files.map(compiled).sort());
  assert.deepEqual(await filesRun(build, postgres), files.slice(0, 5).map(compiled).sort());
  // The browser test, the multi-instance PostgreSQL test, the tunnel and the command run alone, first.
  assert.deepEqual(
    sqlite.slice(0, 4).map((entry) => path.relative(build, entry)),
    [
      'test/http/console/console.test.js',
      'test/storage/postgres-scale-out.test.js',
      'test/e2e/wireguard-tunnel.test.js',
      'test/cli/engines.test.js',
    ],
  );
  // The rest share processes: an area's files together, areas of one file together.
  assert.equal(sqlite.length, 4 + 2);
});
