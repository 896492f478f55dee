// `accounting.radius`: the shared secret is read at start from a file only the portal's user may
// read (a looser file, an empty or missing one refuses the start naming the option, and never
// quotes the secret), and the durations keep within their bounds.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ConfigError, resolvePortalConfig } from '../../src/config/load.js';
import { defaultTestConfig } from '../support/test-portal.js';

function load(dir: string, radius: Record<string, unknown>) {
  return resolvePortalConfig({ ...defaultTestConfig, accounting: { radius } }, 'portal.json', dir);
}

function refusal(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.message;
  }
  assert.fail('the configuration was accepted');
}

test('a shared secret others may read, an empty one or a missing file refuses the start naming the option', (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'radius-config-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'open.secret'), 'very-secret-words\n', { mode: 0o644 });
  writeFileSync(path.join(dir, 'empty.secret'), '', { mode: 0o600 });
  writeFileSync(path.join(dir, 'good.secret'), 'very-secret-words\n', { mode: 0o600 });
  const server = (secretFile: string) => ({ servers: [{ address: 'radius.example.org:1813', secretFile }] });

  const open = refusal(() => load(dir, server('open.secret')));
  assert.match(open, /accounting\.radius\.servers\[0\]\.secretFile: open\.secret is readable by others \(mode 0644\)/);
  assert.doesNotMatch(open, /very-secret-words/);
  assert.match(
    refusal(() => load(dir, server('empty.secret'))),
    /servers\[0\]\.secretFile: empty\.secret is empty/,
  );
  assert.match(
    refusal(() => load(dir, server('missing.secret'))),
    /cannot read missing\.secret \(ENOENT\)/,
  );

  const config = load(dir, { ...server('good.secret'), interimInterval: 'PT5M' });
  const [radius] = config.accounting.radius.servers;
  assert.equal(radius?.host, 'radius.example.org');
  assert.equal(radius?.port, 1813);
  assert.equal(radius?.secret.reveal(), 'very-secret-words', 'the line end is not part of the secret');
  assert.equal(String(radius?.secret), '[redacted]');
  assert.equal(config.accounting.radius.interimIntervalMs, 300_000);
  assert.equal(config.accounting.radius.maxAgeText, 'P1D', 'the default');
});

test('an interim interval or maxAge out of bounds, a server named twice or a bad address is refused', (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'radius-config-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'good.secret'), 's', { mode: 0o600 });
  const one = { address: '[2001:db8::1]:1813', secretFile: 'good.secret' };
  assert.match(
    refusal(() => load(dir, { servers: [one], interimInterval: 'PT10S' })),
    /interimInterval: "PT10S" must be between PT1M and P1D/,
  );
  assert.match(
    refusal(() => load(dir, { servers: [one], maxAge: 'PT5M' })),
    /maxAge: "PT5M" must be between PT1H and P90D/,
  );
  assert.match(
    refusal(() => load(dir, { servers: [one, one] })),
    /servers\[1\]\.address: "\[2001:db8::1\]:1813" is named twice/,
  );
  assert.match(
    refusal(() => load(dir, { servers: [{ ...one, address: 'radius.example.org' }] })),
    /must be HOST:PORT/,
  );
  assert.deepEqual(load(dir, {}).accounting.radius.servers, [], 'no servers: no RADIUS accounting');
});
