// `prepare` (run by `npm ci`, and again by npx the first time it runs `vpn-portal` in a clone):
// compiles src/ to dist/ only when a source is newer than the last build, so the first `npx
// vpn-portal …` after `npm ci` answers in about a second instead of 15 s of silent compiling.
// `npm run build` always compiles.
import { execFileSync } from 'node:child_process';
import { chmodSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const MAIN = 'dist/cli/main.js';

/** The latest modification time of a file or of any file below a folder; 0 when missing. */
function newest(entry) {
  let stat;
  try {
    stat = statSync(entry);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(entry).map((name) => newest(path.join(entry, name))));
}

const built = newest(MAIN);
if (built === 0 || Math.max(newest('src'), newest('tsconfig.json'), newest('package.json')) > built) {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { stdio: 'inherit' });
  chmodSync(MAIN, 0o755);
}
