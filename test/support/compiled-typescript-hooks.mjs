// The module hooks of compiled-typescript.mjs, run by Node on its loader thread: an import of
// `./x.js` from a TypeScript module means `./x.ts` (as for tsc and tsx), and a `.ts` module's
// code is the run's compiled JavaScript, with its source map pointing at the `.ts` file.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformSync } from 'esbuild';

/** The checkout (the run's working directory) and the folder esbuild wrote it to. */
let root = '';
let folder = '';

export function initialize(data) {
  root = data.root;
  folder = data.folder;
}

export async function resolve(specifier, context, nextResolve) {
  const parent = context.parentURL;
  if (parent?.endsWith('.ts') && specifier.endsWith('.js') && /^\.{1,2}\//.test(specifier)) {
    const url = new URL(specifier, parent);
    if (!existsSync(url))
      return { url: `${url.href.slice(0, -'.js'.length)}.ts`, format: 'module', shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return nextLoad(url, context);
  const file = fileURLToPath(url);
  const relative = path.relative(root, file);
  const compiled = path.join(folder, relative).replace(/\.ts$/, '.js');
  if (relative.startsWith('..') || !existsSync(compiled)) {
    const source = readFileSync(file, 'utf8');
    const options = {
      loader: 'ts',
      format: 'esm',
      platform: 'node',
      target: `node${process.versions.node}`,
      sourcemap: 'inline',
      minifyWhitespace: true,
      keepNames: true,
      sourcefile: file,
    };
    return { format: 'module', source: transformSync(source, options).code, shortCircuit: true };
  }
  // esbuild names the source relative to the compiled file; the module runs under the .ts
  // file's URL, where that relative name would lead astray: name it absolutely.
  const code = readFileSync(compiled, 'utf8');
  const map = JSON.parse(readFileSync(`${compiled}.map`, 'utf8'));
  map.sources = [file];
  const body = code.slice(0, code.lastIndexOf('//# sourceMappingURL='));
  const inline = Buffer.from(JSON.stringify(map)).toString('base64');
  return {
    format: 'module',
    source: `${body}//# sourceMappingURL=data:application/json;base64,${inline}\n`,
    shortCircuit: true,
  };
}
