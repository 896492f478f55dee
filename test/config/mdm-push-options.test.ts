// `mdmPush.jamf`: a receiver without a credential is refused at start (anyone could suspend
// devices), as are secret files others may read, missing or empty ones, and an empty list of
// allowed groups; a good section is read as group ids and names per kind of device (a group
// named without its kind stands for both, with a warning at start) and secrets that never print.
import assert from 'node:assert/strict';
import { chmodSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { inspect } from 'node:util';
import { test } from 'node:test';
import { resolvePortalConfig } from '../../src/config/load.js';
import { problemsOf } from '../support/config-problems.js';
import { jamfPushOption, JAMF_PASSWORD, secretsFolder } from '../support/jamf-webhooks.js';
import { defaultTestConfig } from '../support/test-portal.js';

test('mdmPush.jamf needs a credential, secret files only the portal may read, and at least one group', (t) => {
  const folder = secretsFolder();
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  const good = jamfPushOption(folder);
  const { basicAuth: _basic, headerAuth: _header, ...unauthenticated } = good;
  assert.match(
    problemsOf({ ...defaultTestConfig, mdmPush: { jamf: unauthenticated } }),
    /mdmPush\.jamf: needs basicAuth or headerAuth/,
  );
  const loose = path.join(folder, 'loose');
  writeFileSync(loose, 'secret');
  chmodSync(loose, 0o644);
  const empty = path.join(folder, 'empty');
  writeFileSync(empty, '\n', { mode: 0o600 });
  const problems = problemsOf({
    ...defaultTestConfig,
    mdmPush: {
      jamf: {
        ...good,
        basicAuth: { username: 'jamf', passwordFile: loose },
        headerAuth: { name: 'X-Jamf-Secret', valueFile: empty },
        allowList: ['10.0.0.0/33'],
      },
    },
  });
  assert.match(problems, /mdmPush\.jamf\.basicAuth\.passwordFile: .*loose is readable by others \(mode 0644\)/);
  assert.match(problems, /mdmPush\.jamf\.headerAuth\.valueFile: .*empty is empty/);
  assert.match(problems, /mdmPush\.jamf\.allowList\[0\]: "10\.0\.0\.0\/33" is not an IP prefix/);
  assert.match(
    problemsOf({
      ...defaultTestConfig,
      mdmPush: { jamf: { ...good, basicAuth: { username: 'jamf', passwordFile: path.join(folder, 'missing') } } },
    }),
    /mdmPush\.jamf\.basicAuth\.passwordFile: cannot read .*missing \(ENOENT\)/,
  );
  assert.match(
    problemsOf({ ...defaultTestConfig, mdmPush: { jamf: { ...good, allowedGroups: [] } } }),
    /mdmPush\.jamf\.allowedGroups/,
  );

  assert.match(
    problemsOf({
      ...defaultTestConfig,
      mdmPush: { jamf: { ...good, allowedGroups: [{ kind: 'computer', id: 12, name: 'VPN allowed' }] } },
    }),
    /mdmPush\.jamf\.allowedGroups.*needs either "id" or "name", not both/,
  );

  const config = resolvePortalConfig(
    {
      ...defaultTestConfig,
      mdmPush: {
        jamf: {
          ...good,
          allowedGroups: [
            { kind: 'computer', id: 12 },
            { kind: 'mobileDevice', name: 'VPN allowed phones' },
          ],
        },
      },
    },
    'portal.json',
  );
  const jamf = config.mdmPush.jamf;
  assert.ok(jamf !== null);
  assert.deepEqual([...jamf.allowedGroups.computer.ids], [12]);
  assert.deepEqual([...jamf.allowedGroups.computer.names], []);
  assert.deepEqual([...jamf.allowedGroups.mobile.ids], [], 'mobile device group 12 is another group');
  assert.deepEqual([...jamf.allowedGroups.mobile.names], ['VPN allowed phones']);
  assert.deepEqual(config.startWarnings, []);
  assert.equal(jamf.basicAuth?.password.reveal(), JAMF_PASSWORD, 'the final newline is not part of the password');
  assert.equal(jamf.headerAuth?.name, 'x-jamf-secret');
  assert.doesNotMatch(inspect(jamf, { depth: 5 }) + JSON.stringify(jamf), new RegExp(JAMF_PASSWORD));
  assert.equal(resolvePortalConfig(defaultTestConfig, 'portal.json').mdmPush.jamf, null, 'off unless configured');
});

test('a Jamf group named without its kind stands for a group of either kind, and the portal says so at start', (t) => {
  const folder = secretsFolder();
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  const config = resolvePortalConfig(
    { ...defaultTestConfig, mdmPush: { jamf: { ...jamfPushOption(folder), allowedGroups: [12, 'VPN allowed'] } } },
    'portal.json',
  );
  const groups = config.mdmPush.jamf?.allowedGroups;
  assert.deepEqual([...(groups?.computer.ids ?? [])], [12]);
  assert.deepEqual([...(groups?.mobile.ids ?? [])], [12]);
  assert.deepEqual([...(groups?.mobile.names ?? [])], ['VPN allowed']);
  assert.match(
    config.startWarnings.join('\n'),
    /^mdmPush\.jamf\.allowedGroups: 12, "VPN allowed" names no kind of device, .* write \{"kind": "computer" \| "mobileDevice"/,
  );
});
