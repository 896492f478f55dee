// How a directory looks a group up before it changes it: by displayName, compared without regard
// to case (RFC 7643: a Group's displayName is not case-exact). Found by the exact name alone,
// a directory whose group is written in another case here made a second group.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeAdminKey } from '../../support/admin-keys.js';
import { scimClient } from '../../support/scim-client.js';
import { startTestPortal } from '../../support/test-portal.js';

const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';

test('a directory finds its group by displayName in another case, and a name in another case is still its own group', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const scim = scimClient(portal, await makeAdminKey(portal, 'directory', { scope: 'scim' }));
  const made = await scim.send('POST', 'Groups', { schemas: [GROUP], displayName: 'VPN Staff' });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  const accented = await scim.send('POST', 'Groups', { schemas: [GROUP], displayName: 'Équipe VPN' });
  assert.equal(accented.status, 201, JSON.stringify(accented.body));
  await scim.send('POST', 'Groups', { schemas: [GROUP], displayName: 'VPN Staff EU' });

  const found = async (displayName: string): Promise<string[]> => {
    const filter = `displayName eq ${JSON.stringify(displayName)}`;
    const answer = await scim.send('GET', `Groups?filter=${encodeURIComponent(filter)}`);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const resources = (answer.body?.['Resources'] ?? []) as { displayName: string }[];
    assert.equal(answer.body?.['totalResults'], resources.length);
    return resources.map((resource) => resource.displayName);
  };
  assert.deepEqual(await found('vpn staff'), ['VPN Staff']);
  assert.deepEqual(await found('VPN STAFF'), ['VPN Staff']);
  assert.deepEqual(await found('équipe vpn'), ['Équipe VPN'], 'lower-cased as Unicode has it, on both databases');
  assert.deepEqual(await found('VPN Staf'), []);

  // The name stays the group's own: another case is another group, as scim.groupProfiles keys are.
  const second = await scim.send('POST', 'Groups', { schemas: [GROUP], displayName: 'vpn staff' });
  assert.equal(second.status, 201, JSON.stringify(second.body));
  assert.deepEqual(await found('Vpn Staff'), ['VPN Staff', 'vpn staff']);
  const page = await scim.send(
    'GET',
    `Groups?count=1&startIndex=2&filter=${encodeURIComponent('displayName eq "VPN staff"')}`,
  );
  assert.deepEqual(
    [
      page.body?.['totalResults'],
      ((page.body?.['Resources'] ?? []) as { displayName: string }[]).map((one) => one.displayName),
    ],
    [2, ['vpn staff']],
  );
});
