// Puts the test files of one area of the suite into one test process (test/run.sh), a dozen at
// most: a test process pays for loading and warming up the code it tests once, not once per
// file. Measured on the 29 in-process files of test/http/admin-api/ with coverage on: 133 s of
// CPU and 189 s of wall time file by file, 47 s and 44 s together.
//   node test/support/group-test-files.mjs BUILD PASS FILE…   prints the files to hand to node --test
// BUILD is the run's compiled build (build-test-modules.mjs). Each group is a file there,
// BUILD/test/AREA/.group-PASS-N.test.js, importing its test files (PASS keeps the groups of
// two passes that run side by side apart); a file that runs alone is its own
// compiled file. Files that run alone, first: those that start VPN nodes, network namespaces,
// commands or a browser, hold thousands of sockets, or run several portals on one PostgreSQL
// database. They take long, so they start first, and what they do to a process (its children,
// its file limit) stays their own.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** At most this many test files share a process: a group should not outlast the longest file. */
const GROUP_SIZE = 12;

const [build, pass, ...files] = process.argv.slice(2);
if (build === undefined || build === '' || pass === undefined || pass === '') {
  console.error('usage: node test/support/group-test-files.mjs BUILD PASS FILE…');
  process.exit(2);
}

/** Whether a test file needs a process of its own. */
function runsAlone(file) {
  return (
    /^test\/(e2e|agent|cli)\//.test(file) ||
    file.includes('slow-clients') ||
    path.basename(file).startsWith('postgres-') ||
    readFileSync(file, 'utf8').includes('support/console-browser')
  );
}

/** The compiled file of a test file. */
const compiled = (file) => path.join(build, file.replace(/\.ts$/, '.js'));

const alone = [];
/** Test files by area: test/core, test/http, test/storage, … */
const areas = new Map();
for (const given of files) {
  const file = path.relative(process.cwd(), given);
  if (runsAlone(file)) {
    alone.push(compiled(file));
    continue;
  }
  const parts = file.split('/');
  const area = parts.length > 2 ? parts.slice(0, 2).join('/') : parts[0];
  areas.set(area, [...(areas.get(area) ?? []), file]);
}
const groups = [];
/** A group of test files of one area (test/core, …; "test" for files of several small areas). */
function addGroup(area, members) {
  if (members.length === 1) {
    groups.push(compiled(members[0]));
    return;
  }
  const entry = path.join(build, area, `.group-${pass}-${groups.length + 1}.test.js`);
  mkdirSync(path.dirname(entry), { recursive: true });
  const imports = members.map((file) => `import './${path.relative(path.dirname(entry), compiled(file))}';\n`);
  // 'wx': a group file of another pass or run is never overwritten.
  writeFileSync(entry, imports.join(''), { flag: 'wx' });
  groups.push(entry);
}
/** The files of areas that have one only: together, in groups of their own. */
const single = [];
for (const [area, members] of areas) {
  if (members.length === 1) single.push(...members);
  for (let start = 0; members.length > 1 && start < members.length; start += GROUP_SIZE) {
    addGroup(area, members.slice(start, start + GROUP_SIZE));
  }
}
for (let start = 0; start < single.length; start += GROUP_SIZE)
  addGroup('test', single.slice(start, start + GROUP_SIZE));
console.log([...alone, ...groups].join('\n'));
