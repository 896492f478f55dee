// The configuration and Admin API references are generated from the code (npm run docs); a
// committed page that differs from what the generator writes now has drifted from the code.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { GENERATED_PAGES } from '../../tools/docs/pages.js';

const root = new URL('../../', import.meta.url);

for (const page of GENERATED_PAGES) {
  test(`${page.path} is what npm run docs writes from the code today`, () => {
    const committed = readFileSync(new URL(page.path, root), 'utf8');
    assert.ok(committed === page.render(), `${page.path} is out of date: run "npm run docs" and commit the result`);
  });
}

test('the configuration reference names every option of both files, with a meaning', () => {
  const page = readFileSync(new URL('docs/configuration.md', root), 'utf8');
  for (const option of [
    '`baseUrl`',
    '`ProfileList[].wRangeFour`',
    '`WireGuard.enableProxy`',
    '`nodeKeyFile`',
    '`ProxyGuard.maxTunnels`',
    '`OpenVPN.preferAes`',
  ]) {
    assert.match(
      page,
      new RegExp(`^\\| ${option.replace(/[[\].]/g, '\\$&')} \\|.*\\| [A-Z\`].{10,} \\|$`, 'm'),
      option,
    );
  }
});

test("the Admin API reference marks the extensions and leaves the specification's calls unmarked", () => {
  const page = readFileSync(new URL('docs/admin-api.md', root), 'utf8');
  assert.match(page, /^## `POST \/create`$/m);
  assert.match(page, /^## `GET \/connection_log` \(extension\)$/m);
  assert.match(page, /^## `POST \/enrollment_token` \(extension\)$/m);
});
