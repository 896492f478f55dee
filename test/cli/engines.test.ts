// `npm ci` on the supported Node.js versions installs without an engine warning: no installed
// package asks for a newer Node.js than package.json promises to support (fastify's test helper
// pulled in `cookie` 2, which wants Node 22; package.json pins the helper's older release).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import semver from 'semver';

interface LockedPackage {
  readonly engines?: { readonly node?: string };
}

test('every installed package supports the Node.js versions package.json supports, and this one', () => {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    engines: { node: string };
  };
  const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as {
    packages: Record<string, LockedPackage>;
  };
  const lowest = semver.minVersion(manifest.engines.node);
  assert.ok(lowest !== null, 'package.json names the lowest supported Node.js');
  const wanting = Object.entries(lock.packages)
    .filter(([name, locked]) => name !== '' && locked.engines?.node !== undefined)
    .filter(
      ([, locked]) =>
        !semver.satisfies(process.versions.node, locked.engines?.node ?? '*') ||
        !semver.satisfies('20.19.0', locked.engines?.node ?? '*'),
    )
    .map(([name, locked]) => `${name} wants node ${locked.engines?.node ?? ''}`);
  assert.deepEqual(wanting, []);
});
