// The console takes its types from the calls' answer schemas (ADMIN_API_CALLS): a field renamed
// in a schema must fail the type check where the console reads it, not show `undefined` on a
// page. Runs the TypeScript compiler over a copy of src/ with one field renamed.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../../..');

/** The profile listing's display name, which the console shows in its issue forms. */
const FIELD = `export const profileSchema = z.object({
  profile_id: z.string(),
  display_name: z.string(),`;

// It reaches no database, so test/run.sh runs it once, on the SQLite pass (test/support/database-files.ts).
test('renaming a field of a call’s answer schema fails the type check of the console page that reads it', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-answer-types-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(path.join(root, 'src'), path.join(dir, 'src'), { recursive: true });
  symlinkSync(realpathSync(path.join(root, 'node_modules')), path.join(dir, 'node_modules'));
  const { compilerOptions } = JSON.parse(readFileSync(path.join(root, 'tsconfig.json'), 'utf8')) as {
    compilerOptions: Record<string, unknown>;
  };
  // Only the console's files as roots: the compiler follows their imports, and nothing else.
  writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { ...compilerOptions, noEmit: true }, include: ['src/http/console/*.ts'] }),
  );
  const protocol = path.join(dir, 'src/protocol/admin-api.ts');
  const source = readFileSync(protocol, 'utf8');
  assert.ok(source.includes(FIELD), 'the profile schema has display_name where this test expects it');
  writeFileSync(protocol, source.replace(FIELD, FIELD.replace('display_name', 'title')));

  const typescript = path.join(root, 'node_modules/typescript/bin/tsc');
  const checked = await run(process.execPath, [typescript, '-p', dir], { cwd: dir }).then(
    () => ({ failed: false, output: '' }),
    (error: { stdout?: string }) => ({ failed: true, output: error.stdout ?? '' }),
  );
  assert.ok(checked.failed, 'the type check passed with the field renamed');
  const consoleErrors = checked.output
    .split('\n')
    .filter((line) => line.startsWith('src/http/console/') && line.includes('error TS'));
  assert.ok(
    consoleErrors.some((line) => line.includes("'display_name'")),
    `no console error names the renamed field:\n${checked.output}`,
  );
});
