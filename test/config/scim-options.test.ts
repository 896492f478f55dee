// `scim`: a group of `scim.groupProfiles` naming a profile the portal does not have refuses the
// start naming the group (a mapping that silently takes nothing would be worse), an allow-list
// entry that is no prefix likewise, and a good mapping is read as group → profile ids.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { resolvePortalConfig } from '../../src/config/load.js';
import { problemsOf } from '../support/config-problems.js';
import { defaultTestConfig } from '../support/test-portal.js';

test('scim.groupProfiles must name profiles the portal has, and scim.allowList prefixes', () => {
  const problems = problemsOf({
    ...defaultTestConfig,
    scim: { allowList: ['10.0.0.0/33'], groupProfiles: { 'VPN Staff': ['employees', 'staff'] } },
  });
  assert.match(problems, /scim\.groupProfiles\["VPN Staff"\]: there is no profile "staff" \(profiles: employees\)/);
  assert.match(problems, /scim\.allowList\[0\]: "10\.0\.0\.0\/33" is not an IP prefix/);
  assert.match(
    problemsOf({ ...defaultTestConfig, scim: { groupProfiles: { Empty: [] } } }),
    /scim\.groupProfiles\.Empty/,
  );
});

test('a good mapping is read as group name to profile ids; none by default', () => {
  const mapped = resolvePortalConfig(
    { ...defaultTestConfig, scim: { groupProfiles: { 'VPN Staff': ['employees'] } } },
    'portal.json',
  );
  assert.deepEqual([...mapped.scim.groupProfiles], [['VPN Staff', ['employees']]]);
  assert.deepEqual(mapped.scim.allowList, ['0.0.0.0/0', '::/0']);
  assert.equal(resolvePortalConfig(defaultTestConfig, 'portal.json').scim.groupProfiles.size, 0);
});
