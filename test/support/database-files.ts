// Which test files can behave differently on PostgreSQL: test/run.sh runs only those on its
// PostgreSQL pass, since a file that never reaches a database gives the same answers twice.
// The two passes differ only in TEST_DATABASE_URL (read by test-portal.ts and postgres.ts)
// and in the files named postgres-*; a file reaches the database when it, or any test file it
// imports (followed through every relative import of test/), names one of these variables.
//
//   node --import tsx test/support/database-files.ts FILE…   prints the files that do, one a line
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The variables by which a test process learns which database its pass is on. */
const PASS_VARIABLES = /\bTEST_DATABASE_URL\b|\bTEST_POSTGRES_URL\b|\bTEST_POSTGRES_SOCKET_DIR\b/;
/** A relative module path in quotes: imports, dynamic imports and files handed to new processes. */
const RELATIVE_PATH = /['"`](\.{1,2}\/[^'"`\s]+\.(?:[cm]?[jt]s))['"`]/g;

/** The test files (and their helpers) that `file` imports, as paths that exist. */
function relativeImports(file: string, text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(RELATIVE_PATH)) {
    const target = path.resolve(path.dirname(file), match[1] ?? '');
    const candidates = [target, target.replace(/\.[cm]?js$/, '.ts')];
    const existing = candidates.find((candidate) => existsSync(candidate));
    if (existing !== undefined) found.push(existing);
  }
  return found;
}

/** Whether `file` runs differently on the PostgreSQL pass: it is a postgres-* file, or it (or an import of it in test/) names a pass variable. */
export function reachesDatabase(file: string, testRoot: string): boolean {
  if (path.basename(file).startsWith('postgres-')) return true;
  const seen = new Set<string>();
  const pending = [path.resolve(file)];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (seen.has(next)) continue;
    seen.add(next);
    const text = readFileSync(next, 'utf8');
    if (PASS_VARIABLES.test(text)) return true;
    // Only test/ decides: src/ never reads the pass variables.
    pending.push(...relativeImports(next, text).filter((target) => target.startsWith(testRoot + path.sep)));
  }
  return false;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const testRoot = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
  for (const file of process.argv.slice(2)) if (reachesDatabase(file, testRoot)) console.log(file);
}
