// One place decides what an admin key limited to some profiles may see and touch
// (src/core/access/profile-reach.ts): no other use case reads the key's profiles itself, so a
// new listing or call cannot show or change things of another profile by a rule of its own.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const core = fileURLToPath(new URL('../../../src/core/', import.meta.url));

/** Where a key's profiles may be read: where they are defined, the one place that decides, and the rules for making keys. */
const ALLOWED = new Set(['admin-call.ts', 'access/profile-reach.ts', 'access/admin-key-calls.ts']);

function sources(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

test("only src/core/access/profile-reach.ts reads a key's profile limit: every call and listing asks it what the key may see and touch", () => {
  const readers = sources(core)
    .map((path) => relative(core, path))
    .filter((file) => !ALLOWED.has(file))
    .filter((file) =>
      /\bprofileLimit\(|\bcaller\.profiles\b|\bcaller\?\.profiles\b/.test(readFileSync(join(core, file), 'utf8')),
    );
  assert.deepEqual(readers, []);
});
