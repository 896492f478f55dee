// Every relative link in the README and the docs tree leads somewhere: the file exists, and an
// `#anchor` names a heading of that page as GitHub makes its anchors. A page moved or a heading
// renamed breaks this test, not a reader's click.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { headingAnchors, linesOutsideFences } from '../../tools/docs/markdown.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

function markdownFiles(): string[] {
  const files = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md', 'bench/README.md'].filter((file) =>
    existsSync(path.join(root, file)),
  );
  const walk = (folder: string): void => {
    for (const entry of readdirSync(path.join(root, folder), { withFileTypes: true })) {
      const relative = path.join(folder, entry.name);
      if (entry.isDirectory()) walk(relative);
      else if (entry.name.endsWith('.md')) files.push(relative);
    }
  };
  walk('docs');
  return files;
}

/** Link targets outside fenced code and inline code: `[text](target)` and `[label]: target`. */
function linkTargets(markdown: string): string[] {
  const targets: string[] = [];
  for (const line of linesOutsideFences(markdown)) {
    const text = line.replace(/(`+)[^`]*?\1/g, '');
    for (const match of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) targets.push(match[1] ?? '');
    const definition = /^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(text);
    if (definition?.[1] !== undefined) targets.push(definition[1]);
  }
  return targets;
}

const anchorsOf = new Map<string, Set<string>>();
function anchors(file: string): Set<string> {
  let found = anchorsOf.get(file);
  if (found === undefined) {
    found = headingAnchors(readFileSync(file, 'utf8'));
    anchorsOf.set(file, found);
  }
  return found;
}

test('every relative link and #anchor in README.md, CONTRIBUTING.md, CHANGELOG.md, bench/README.md and docs/ resolves', () => {
  const broken: string[] = [];
  const files = markdownFiles();
  assert.ok(files.length > 10, `docs pages found: ${files.join(', ')}`);
  for (const file of files) {
    const absolute = path.join(root, file);
    for (const target of linkTargets(readFileSync(absolute, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: — not ours to check offline
      const [pathPart = '', anchor] = target.split('#', 2);
      const destination =
        pathPart === '' ? absolute : path.resolve(path.dirname(absolute), decodeURIComponent(pathPart));
      if (!existsSync(destination)) {
        broken.push(`${file}: ${target} (no such file)`);
        continue;
      }
      if (anchor === undefined || anchor === '') continue;
      if (statSync(destination).isDirectory() || !destination.endsWith('.md')) {
        broken.push(`${file}: ${target} (an anchor into a file that is not a Markdown page)`);
      } else if (!anchors(destination).has(decodeURIComponent(anchor))) {
        broken.push(`${file}: ${target} (no such heading in ${path.relative(root, destination)})`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

test('the link check finds links and anchors as GitHub does, and ignores code', () => {
  assert.deepEqual(linkTargets('See [a](docs/a.md#x-y) and `[b](nope.md)`.\n```\n[c](nope.md)\n```\n[d]: other.md#z'), [
    'docs/a.md#x-y',
    'other.md#z',
  ]);
  assert.deepEqual(
    [
      ...headingAnchors(
        '# Renewal: `extend` and `configuration.expiring`\n## A — B\n## A — B\n```\n# not a heading\n```',
      ),
    ],
    ['renewal-extend-and-configurationexpiring', 'a--b', 'a--b-1'],
  );
});
