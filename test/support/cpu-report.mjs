// Where a test run's time goes, file by file (TEST_CPU_REPORT=FILE bash test/run.sh): loaded
// into every test process, it appends one line to FILE when the process exits — the test
// file, the pass's database, its wall time, and the CPU time of the process itself and of the
// processes it started and waited for (portals, commands, wireguard-go: Linux adds a child's
// time to its parent's once it is reaped). A PostgreSQL server's time is its own, not counted.
//   node test/support/cpu-report.mjs FILE      prints the files that cost most, CPU first
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** /proc counts in USER_HZ, 100 a second on Linux. */
const TICKS_PER_SECOND = 100;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  printSummary(process.argv[2] ?? '');
} else {
  const report = process.env.TEST_CPU_REPORT;
  const started = Date.now();
  // test/run.sh runs each test file's JavaScript from its build (.test-build-PID-ts/test/….test.js),
  // several files of an area in one process (.group-PASS-N.test.js): the report names the .ts files.
  const entry = process.argv[1] ?? '';
  const shared = path.basename(entry).startsWith('.group-')
    ? [...readFileSync(entry, 'utf8').matchAll(/import '\.\/(.*)\.test\.js'/g)].map((match) => match[1]).join(', ')
    : '';
  const source = entry.replace(/\/\.test-build-\d+-ts\//, '/');
  const testFile =
    shared === '' ? source.replace(/\.test\.js$/, '.test.ts') : `${path.dirname(source)}/{${shared}}.test.ts`;
  if (report !== undefined && report !== '' && testFile?.endsWith('.test.ts')) {
    process.on('exit', () => {
      // /proc/self/stat after the command name: utime, stime, cutime, cstime are fields 12–15.
      const stat = readFileSync('/proc/self/stat', 'utf8');
      const fields = stat
        .slice(stat.lastIndexOf(')') + 2)
        .split(' ')
        .map(Number);
      const [user, system, childUser, childSystem] = fields.slice(11, 15);
      const line = {
        file: testFile,
        database: process.env.TEST_DATABASE_URL ? 'postgres' : 'sqlite',
        wallSeconds: (Date.now() - started) / 1000,
        ownCpuSeconds: (user + system) / TICKS_PER_SECOND,
        childCpuSeconds: (childUser + childSystem) / TICKS_PER_SECOND,
      };
      appendFileSync(report, `${JSON.stringify(line)}\n`);
    });
  }
}

function printSummary(report) {
  const rows = readFileSync(report, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line));
  const cpu = (row) => row.ownCpuSeconds + row.childCpuSeconds;
  const total = (database) => rows.filter((row) => row.database === database).reduce((sum, row) => sum + cpu(row), 0);
  console.log(
    `CPU of the test processes and what they started: SQLite pass ${Math.round(total('sqlite'))} s, PostgreSQL pass ${Math.round(total('postgres'))} s (${rows.length} file runs)`,
  );
  console.log('the 20 file runs that cost most CPU (own + started processes, wall):');
  for (const row of rows.sort((a, b) => cpu(b) - cpu(a)).slice(0, 20)) {
    const name = row.file.slice(row.file.indexOf('/test/') + 1);
    console.log(
      `  ${cpu(row).toFixed(1).padStart(6)} s  (${row.ownCpuSeconds.toFixed(1)} + ${row.childCpuSeconds.toFixed(1)}, wall ${row.wallSeconds.toFixed(0)} s)  ${row.database.padEnd(8)} ${name}`,
    );
  }
}
