// Lets the test processes of test/run.sh load the TypeScript of src/, test/, tools/ and bench/
// as JavaScript that esbuild made once for the whole run (TEST_COMPILED_TYPESCRIPT names its
// folder), instead of each process compiling what it imports through tsx: some 0.6 s of CPU
// saved per test file, a few minutes per run. Modules keep their own URLs (`….ts`), so paths
// made from import.meta.url lead where they always did, and coverage maps back to the sources.
// A file the build does not have (one a test wrote) is compiled when it is loaded.
//   node --import ./test/support/compiled-typescript.mjs --test …
import { register } from 'node:module';

const folder = process.env.TEST_COMPILED_TYPESCRIPT;
if (folder === undefined || folder === '') {
  throw new Error('compiled-typescript.mjs: TEST_COMPILED_TYPESCRIPT names no folder (test/run.sh sets it)');
}
// Stack traces name the .ts files' lines; and the source maps are kept for coverage even once
// coverage-scope.ts has taken NODE_V8_COVERAGE from the environment (Node keeps a module's map
// only while one of the two is on).
process.setSourceMapsEnabled(true);
register('./compiled-typescript-hooks.mjs', import.meta.url, { data: { root: process.cwd(), folder } });
