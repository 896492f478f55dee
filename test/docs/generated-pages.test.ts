// The configuration and Admin API references are generated from the code (npm run docs); a
// committed page that differs from what the generator writes now has drifted from the code.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { z } from 'zod';
import { nodeAgentConfigSchema } from '../../src/agent/config.js';
import { portalConfigSchema } from '../../src/config/schema.js';
import type { JsonSchema } from '../../tools/docs/json-schema.js';
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

/**
 * Every option that holds a value rather than more options, by its dotted name (`a.b`, a list of
 * objects as `a[].b`), found through objects, lists of objects and `null`-or-object options.
 */
function leafOptions(schema: JsonSchema, prefix = ''): string[] {
  const leaves: string[] = [];
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const shapes = [property, ...(property.anyOf ?? []), ...(property.oneOf ?? [])];
    const objects = shapes.filter((shape) => shape.type === 'object' && shape.properties !== undefined);
    const lists = shapes.flatMap((shape) =>
      shape.type === 'array' && shape.items?.type === 'object' && shape.items.properties !== undefined
        ? [shape.items]
        : [],
    );
    if (objects.length === 0 && lists.length === 0) leaves.push(`${prefix}${name}`);
    for (const object of objects) leaves.push(...leafOptions(object, `${prefix}${name}.`));
    for (const item of lists) leaves.push(...leafOptions(item, `${prefix}${name}[].`));
  }
  return leaves;
}

test('the configuration reference lists every leaf option of both schemas, nested ones by their dotted name', () => {
  const page = readFileSync(new URL('docs/configuration.md', root), 'utf8');
  const documented = new Set([...page.matchAll(/^\| `([^`]+)` \|/gm)].map((match) => match[1]));
  const leaves = [portalConfigSchema, nodeAgentConfigSchema].flatMap((schema) =>
    leafOptions(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema),
  );
  assert.ok(leaves.includes('enrollment.clientCertificate.trustedProxyList'), 'the walk reaches nullable objects');
  const missing = leaves.filter((leaf) => !documented.has(leaf));
  assert.deepEqual(missing, [], `options missing from docs/configuration.md: ${missing.join(', ')}`);
});

test("the Admin API reference marks the extensions and leaves the specification's calls unmarked", () => {
  const page = readFileSync(new URL('docs/admin-api.md', root), 'utf8');
  assert.match(page, /^## `POST \/create`$/m);
  assert.match(page, /^## `GET \/connection_log` \(extension\)$/m);
  assert.match(page, /^## `POST \/enrollment_token` \(extension\)$/m);
});
