// `node --import tsx bench/profile-top.ts FILE.cpuprofile [N] [SKIP_SECONDS]`: the top N functions of a V8 CPU
// profile (as `BENCH_PROFILE=DIR npm run bench` writes for the portal) by self time, and the
// share of samples under each source area (our src/, node_modules, Node itself), for
// bench/README.md; the first SKIP_SECONDS of the profile (start-up, warm-up) are left out. Self time is sampled wall time on CPU; idle and GC are listed as V8 names them.
import { readFileSync } from 'node:fs';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly hitCount?: number;
}

const [file, count = '25', skip = '0'] = process.argv.slice(2);
if (file === undefined) throw new Error('usage: profile-top.ts FILE.cpuprofile [N]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
};
const selfUs = new Map<number, number>();
let elapsedUs = 0;
profile.samples.forEach((id, index) => {
  const delta = profile.timeDeltas[index] ?? 0;
  elapsedUs += delta;
  if (elapsedUs >= Number(skip) * 1e6) selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
});
const byFunction = new Map<string, number>();
const byArea = new Map<string, number>();
let total = 0;
for (const node of profile.nodes) {
  const us = selfUs.get(node.id) ?? 0;
  if (us === 0) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  const path = url.replace(/^file:\/\//, '');
  const where = path.includes('/node_modules/')
    ? path.replace(/.*\/node_modules\//, 'node_modules/')
    : path.replace(/.*\/dist\//, 'dist/');
  const name = `${functionName || '(anonymous)'} ${where}${where === '' ? '' : `:${lineNumber + 1}`}`;
  byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  const area =
    functionName === '(idle)'
      ? 'idle'
      : where.startsWith('dist/')
        ? 'portal (dist/)'
        : where.startsWith('node_modules/')
          ? where.split('/').slice(1, 2).join('')
          : where === ''
            ? `V8/native: ${functionName}`
            : 'node:internal';
  byArea.set(area, (byArea.get(area) ?? 0) + us);
  total += us;
}
const busy = total - (byArea.get('idle') ?? 0);
console.log(`samples: ${(total / 1e6).toFixed(2)} s, busy ${(busy / 1e6).toFixed(2)} s`);
console.log('\n| self, % of busy | function |\n|---:|---|');
for (const [name, us] of [...byFunction]
  .filter(([name]) => !name.startsWith('(idle)'))
  .sort((a, b) => b[1] - a[1])
  .slice(0, Number(count))) {
  console.log(`| ${((100 * us) / busy).toFixed(1)} | \`${name}\` |`);
}
console.log('\n| area | % of busy |\n|---|---:|');
for (const [area, us] of [...byArea]
  .filter(([area]) => area !== 'idle')
  .sort((a, b) => b[1] - a[1])
  .slice(0, 15))
  console.log(`| ${area} | ${((100 * us) / busy).toFixed(1)} |`);
