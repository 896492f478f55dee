// Words that send a reader somewhere must lead there: a comment or a page that names a file of
// this repository names one a clone has, and nothing points at an issue tracker the repository
// does not have or at notes kept outside it. A file renamed or moved breaks this test, not a
// reader's search.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Folders a clone makes for itself (installed, built, written by the tests); never mentioned as sources. */
const notSources = new Set(['node_modules', 'dist', '.git', 'coverage', 'data', 'test-screenshots']);

function filesUnder(folder: string): string[] {
  const files: string[] = [];
  const walk = (relative: string): void => {
    for (const entry of readdirSync(path.join(root, relative), { withFileTypes: true })) {
      if (notSources.has(entry.name)) continue;
      const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else files.push(child);
    }
  };
  walk(folder);
  return files;
}

const codeFolders = ['src', 'test', 'tools', 'bench'];
const pages = [
  'README.md',
  'CONTRIBUTING.md',
  ...filesUnder('docs').filter((file) => file.endsWith('.md')),
  ...codeFolders.flatMap(filesUnder).filter((file) => file.endsWith('.md')),
];
const codeFiles = codeFolders.flatMap(filesUnder).filter((file) => /\.(?:ts|mts|js|mjs|cjs|sh)$/.test(file));

/**
 * The comment text of a source file, line by line (empty where a line has none): whole-line
 * comments and a comment after code. Strings are not comments: a test may name a file it makes.
 */
function commentLines(file: string, text: string): string[] {
  const shell = file.endsWith('.sh');
  return text.split('\n').map((line) => {
    const trimmed = line.trimStart();
    if (shell) {
      if (trimmed.startsWith('#')) return trimmed;
      return /\s#\s(.*)$/.exec(line)?.[1] ?? '';
    }
    if (trimmed.startsWith('//') || trimmed.startsWith('/*') || trimmed.startsWith('*')) return trimmed;
    return /(?:^|[\s;,)])\/\/\s(.*)$/.exec(line)?.[1] ?? '';
  });
}

/** Paths into this repository's folders (`src/…`, `test/…`, …), globs included, and bare source file names. */
function fileMentions(text: string): { paths: string[]; names: string[] } {
  const paths: string[] = [];
  const names: string[] = [];
  for (const match of text.matchAll(/(?<![\w.@/-])((?:src|test|tools|bench|examples)\/[\w.*/-]*)/g)) {
    paths.push((match[1] ?? '').replace(/[.,:-]+$/, ''));
  }
  for (const match of text.matchAll(/(?<![\w.*@/-])([\w-]+(?:\.[\w-]+)*\.(?:ts|mjs|cjs|sh))\b(?![\w/-])/g)) {
    names.push(match[1] ?? '');
  }
  return { paths, names };
}

/** Text that points at an issue tracker by number: the word issue, or issues, then a number, `#` or not. */
function issueNumbers(text: string): string[] {
  return [...text.matchAll(/\bissues? #?\d+/gi)].map((match) => match[0]);
}

const allFiles = filesUnder('');
const baseNames = new Set(allFiles.map((file) => path.posix.basename(file)));
/** Files the tools write and git ignores (`bench/results.json`): named as outputs, never committed. */
const writtenOutputs = new Set(
  readFileSync(path.join(root, '.gitignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim().replace(/^\//, ''))
    .filter((line) => line !== '' && !line.startsWith('#') && !line.includes('*')),
);

function globPattern(glob: string): RegExp {
  const body = glob
    .split(/(\*\*\/|\*)/)
    .map((part) => {
      if (part === '**/') return '(?:.*/)?';
      if (part === '*') return '[^/]*';
      return part.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  return new RegExp(`^${body}$`);
}

function pathLeadsSomewhere(mention: string): boolean {
  if (mention.includes('*')) {
    const pattern = globPattern(mention);
    return allFiles.some((file) => pattern.test(file));
  }
  return existsSync(path.join(root, mention)) || writtenOutputs.has(mention.replace(/\/$/, ''));
}

/** Every file scanned with the text a reader reads there: a page whole, a source file's comments. */
function readerText(): { file: string; lines: string[] }[] {
  return [
    ...pages.map((file) => ({ file, lines: readFileSync(path.join(root, file), 'utf8').split('\n') })),
    ...codeFiles.map((file) => ({ file, lines: commentLines(file, readFileSync(path.join(root, file), 'utf8')) })),
  ];
}

test('every file or folder a comment or a docs page names exists in the repository', () => {
  const scanned = readerText();
  assert.ok(scanned.length > 300, `files scanned: ${scanned.length}`);
  const missing: string[] = [];
  for (const { file, lines } of scanned) {
    lines.forEach((line, index) => {
      const { paths, names } = fileMentions(line);
      for (const mention of paths) {
        if (!pathLeadsSomewhere(mention)) missing.push(`${file}:${index + 1}: ${mention}`);
      }
      for (const name of names) {
        if (!baseNames.has(name)) missing.push(`${file}:${index + 1}: ${name} (no file has this name)`);
      }
    });
  }
  assert.deepEqual(missing, []);
});

test('no source file or docs page points at an issue tracker the repository does not have', () => {
  const found: string[] = [];
  for (const file of [...pages, ...codeFiles]) {
    readFileSync(path.join(root, file), 'utf8')
      .split('\n')
      .forEach((line, index) => {
        for (const mention of issueNumbers(line)) found.push(`${file}:${index + 1}: ${mention}`);
      });
  }
  assert.deepEqual(found, []);
});

test('the docs send no reader to a file outside the clone', () => {
  const outside: string[] = [];
  for (const file of pages) {
    readFileSync(path.join(root, file), 'utf8')
      .split('\n')
      .forEach((line, index) => {
        // The specification and the reference server's facts are kept next to the repository, not in it.
        if (/\.\.\/shared\b/.test(line)) outside.push(`${file}:${index + 1}: ../shared`);
        if (line.includes('§')) outside.push(`${file}:${index + 1}: a § into a document the clone does not have`);
      });
  }
  assert.deepEqual(outside, []);
});

test('the checks find paths, file names and issue numbers in comments, and not in code', () => {
  assert.deepEqual(
    commentLines(
      'a.ts',
      "const file = 'src/gone.ts'; // kept in src/portal.ts\n * see test/docs/\n/* tools/docs/generate.ts */",
    ),
    ['kept in src/portal.ts', '* see test/docs/', '/* tools/docs/generate.ts */'],
  );
  assert.deepEqual(commentLines('a.sh', 'echo src/gone.sh # from test/run.sh\n# bench/run.sh'), [
    'from test/run.sh',
    '# bench/run.sh',
  ]);
  assert.deepEqual(fileMentions('`src/a/b.ts`, test/**/postgres-*.test.ts and dist/src/c.ts; see d-e.ts or x.json.'), {
    paths: ['src/a/b.ts', 'test/**/postgres-*.test.ts'],
    names: ['d-e.ts'],
  });
  assert.ok(globPattern('test/**/postgres-*.test.ts').test('test/storage/postgres-db-copy.test.ts'));
  assert.ok(!globPattern('test/postgres-*.test.ts').test('test/storage/postgres-db-copy.test.ts'));
  assert.deepEqual(issueNumbers(`issue ${7}, Issues #${8} and 9; issued 3; tissue ${4}`), [
    `issue ${7}`,
    `Issues #${8}`,
  ]);
});
