// Compiles the TypeScript of src/, test/, tools/ and bench/ once per run of test/run.sh into
// JavaScript beside it (OUTDIR/src/…, OUTDIR/test/…), which the test processes then run as it
// is: no TypeScript loader compiling every module again in every test process, no loader
// thread that each of some 800 imports has to pass through (about 1.5 s of CPU per test file).
//   node test/support/build-test-modules.mjs OUTDIR
// Source maps lead back to the .ts files, for stack traces (node --enable-source-maps) and
// for coverage; built as tsx builds (whitespace removed, names kept), so that the coverage
// figures stay those of a file run on its own through tsx.
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const outdir = process.argv[2];
if (outdir === undefined || outdir === '') {
  console.error('usage: node test/support/build-test-modules.mjs OUTDIR');
  process.exit(2);
}

/** Every .ts file under a folder the tests load code from. */
function typeScriptFiles(folder) {
  return readdirSync(folder, { recursive: true })
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))
    .map((name) => path.join(folder, name));
}

rmSync(outdir, { recursive: true, force: true });
const { metafile } = await build({
  entryPoints: ['src', 'test', 'tools', 'bench'].flatMap(typeScriptFiles),
  outbase: '.',
  outdir,
  format: 'esm',
  platform: 'node',
  target: `node${process.versions.node}`,
  sourcemap: 'linked',
  // The maps name the .ts files, which coverage reads from disk: no copy of them in the maps.
  sourcesContent: false,
  minifyWhitespace: true,
  keepNames: true,
  metafile: true,
  logLevel: 'warning',
});

/**
 * A module's `import.meta.url`, `dirname` and `filename` stay those of its .ts file: src/ and
 * the tests find assets, examples, fixtures and the checkout relative to themselves. Each is
 * replaced by a call of the same length, so that the source map's columns stay right, to a
 * function declared at the end of the file (declarations are hoisted: defined from the start).
 */
const OWN_IMPORT_META = [
  ['import.meta.url', '(__importUrl())', (ts) => pathToFileURL(ts).href],
  ['import.meta.dirname', '(__importDirname())', (ts) => path.dirname(ts)],
  ['import.meta.filename', '(__importFilename())', (ts) => ts],
];
for (const [expression, call] of OWN_IMPORT_META) {
  if (expression.length !== call.length) throw new Error(`${call} must be as long as ${expression}`);
}
for (const [output, { entryPoint }] of Object.entries(metafile.outputs)) {
  if (entryPoint === undefined) continue;
  const code = readFileSync(output, 'utf8');
  if (!code.includes('import.meta.')) continue;
  const typeScript = path.resolve(entryPoint);
  const mapComment = code.lastIndexOf('//# sourceMappingURL=');
  let body = code.slice(0, mapComment);
  let declarations = '';
  for (const [expression, call, value] of OWN_IMPORT_META) {
    if (!body.includes(expression)) continue;
    body = body.replaceAll(expression, call);
    declarations += `function ${call.slice(1, -3)}(){return ${JSON.stringify(value(typeScript))}}\n`;
  }
  writeFileSync(output, `${body}${declarations}${code.slice(mapComment)}`);
}
