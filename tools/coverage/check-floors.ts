// After `npm test`: the share of lines the suite runs in each folder that CONTRIBUTING.md gives
// a floor, read from c8's coverage/coverage-summary.json. Below a floor, the run fails, so
// coverage only falls when someone lowers the floor on purpose. `--report-only` prints the
// figures without failing (a run of some files, or of one database, covers less).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const root = fileURLToPath(new URL('../../', import.meta.url));
const reportOnly = process.argv.includes('--report-only');

const countsSchema = z.object({ total: z.number(), covered: z.number() });
const summarySchema = z.record(z.string(), z.object({ lines: countsSchema }));

/** Rows of the form "| `src/core/` | 80 % |" under CONTRIBUTING.md's "Coverage" heading. */
function floorsOf(contributing: string): { readonly folder: string; readonly percent: number }[] {
  const section = contributing.split(/^## /m).find((part) => part.startsWith('Coverage')) ?? '';
  return [...section.matchAll(/^\| `(src\/[\w/-]+\/)` \| (\d+) % \|/gm)].map((match) => ({
    folder: match[1] ?? '',
    percent: Number(match[2]),
  }));
}

const floors = floorsOf(readFileSync(`${root}CONTRIBUTING.md`, 'utf8'));
if (floors.length === 0) throw new Error('CONTRIBUTING.md states no coverage floors under "## Coverage"');
const summary = summarySchema.parse(JSON.parse(readFileSync(`${root}coverage/coverage-summary.json`, 'utf8')));

let below = 0;
for (const { folder, percent } of floors) {
  let total = 0;
  let covered = 0;
  for (const [file, counts] of Object.entries(summary)) {
    if (!file.startsWith(`${root}${folder}`)) continue;
    total += counts.lines.total;
    covered += counts.lines.covered;
  }
  const measured = total === 0 ? 0 : (100 * covered) / total;
  const verdict = measured >= percent ? 'ok' : reportOnly ? 'below, not checked' : 'BELOW';
  if (measured < percent && !reportOnly) below++;
  console.log(
    `${folder.padEnd(14)} ${measured.toFixed(1).padStart(5)} % of ${total} lines (floor ${percent} %: ${verdict})`,
  );
}
process.exitCode = below > 0 ? 1 : 0;
