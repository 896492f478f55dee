// A device that registers itself with its MDM certificate (registerAs) belongs to the user the
// directory (SCIM) provisioned when the certificate's e-mail address names that user in another
// letter case (`Alice@Example.org` for the directory's `alice@example.org`, as a UPN and a mail
// attribute often differ): it is held to the directory's groups, and the directory's deactivation
// takes its tunnel. Made a user of its own, the device would be out of the directory's reach.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { REVOCATION_HEADER } from '../../../src/protocol/admin-api.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { makeAdminKey, twoProfiles } from '../../support/admin-keys.js';
import { enrollOverTls, MdmCa, tlsEnrollUrl } from '../../support/mdm-ca.js';
import { errorBody } from '../../support/raw-http.js';
import { patchOp, resourcesOf, type ScimClient, scimClient } from '../../support/scim-client.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

let ca: MdmCa;
let portal: TestPortal;
let scim: ScimClient;

before(async () => {
  ca = MdmCa.make();
  portal = await startTestPortal({
    config: {
      ...twoProfiles,
      scim: { groupProfiles: { 'VPN Staff': ['employees'], 'VPN Returners': ['employees'] } },
      enrollment: ca.mutualTlsEnrollment({ registerAs: { from: 'san-email', profileId: 'employees' } }),
    },
  });
  scim = scimClient(portal, await makeAdminKey(portal, 'entra', { scope: 'scim' }));
});
after(async () => {
  await portal?.close();
  ca?.remove();
});

const enroll = (serial: string, email: string) => {
  const publicKey = generateWireGuardKeyPair().publicKey;
  const answer = enrollOverTls(
    tlsEnrollUrl(portal),
    ca,
    ca.device(serial, { cn: serial, uri: `urn:mdm:serial:${serial}`, email }),
    { public_key: publicKey, platform: 'macos' },
  );
  return { publicKey, answer };
};

/** The directory provisions the user, in the groups named (made, or joined if they exist). */
async function provision(userName: string, groups: readonly string[]): Promise<string> {
  const created = await scim.send('POST', 'Users', {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName,
    active: true,
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const scimId = String(created.body?.['id']);
  for (const displayName of groups) {
    const found = resourcesOf<{ id: string }>(
      await scim.send('GET', `Groups?filter=${encodeURIComponent(`displayName eq "${displayName}"`)}`),
    );
    const group =
      found[0] === undefined
        ? await scim.send('POST', 'Groups', {
            schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
            displayName,
            members: [{ value: scimId }],
          })
        : await scim.send(
            'PATCH',
            `Groups/${found[0].id}`,
            patchOp({ op: 'Add', path: 'members', value: [{ value: scimId }] }),
          );
    assert.ok([200, 201].includes(group.status), JSON.stringify(group.body));
  }
  return scimId;
}

test("a laptop whose certificate names the directory's user in other letters is that user's, and the directory's deactivation takes its tunnel", async () => {
  const scimId = await provision('alice@example.org', ['VPN Staff']);

  const laptop = enroll('CASE-LAPTOP-1', 'Alice@Example.org');
  const enrolled = await laptop.answer;
  assert.equal(enrolled.status, 200, enrolled.text);
  const devices = (await portal.admin.devices()).devices.filter((device) => device.serial === 'CASE-LAPTOP-1');
  assert.deepEqual(
    devices.map((device) => device.user_id),
    ['alice@example.org'],
    "the device is the directory's user's, not a new user's",
  );
  assert.ok(!(await portal.admin.users()).includes('Alice@Example.org'), 'no second user is made');

  // Entra ID deactivates her: the laptop's configuration is among what the disable takes.
  const deactivated = await scim.send(
    'PATCH',
    `Users/${scimId}`,
    patchOp({ op: 'Replace', path: 'active', value: 'False' }),
  );
  assert.equal(deactivated.status, 200, JSON.stringify(deactivated.body));
  const receipt = await portal.admin.revocation(deactivated.headers.get(REVOCATION_HEADER) ?? '');
  assert.deepEqual(
    receipt.nodes.flatMap((node) => node.connection_ids),
    [laptop.publicKey],
    "the laptop's peer leaves the node under the deactivation's receipt",
  );
  assert.deepEqual(await portal.admin.disabledUsers(), ['alice@example.org']);

  // Deactivated, she gets no new device by another certificate in other letters either.
  const phone = await enroll('CASE-PHONE-1', 'ALICE@EXAMPLE.ORG').answer;
  assert.equal(phone.status, 403, phone.text);
  assert.equal(errorBody(phone.text), 'user is disabled');
  assert.deepEqual(
    (await portal.admin.users()).filter((userId) => userId.toLowerCase() === 'alice@example.org'),
    ['alice@example.org'],
  );
});

test('a certificate naming in other letters a directory user none of whose groups grants the profile registers nothing', async () => {
  await provision('bruno@example.org', ['VPN Guests']);
  const devicesBefore = JSON.stringify(await portal.admin.devices());

  const refused = await enroll('CASE-LAPTOP-2', 'Bruno@Example.org').answer;
  assert.equal(refused.status, 403, refused.text);
  assert.equal(
    errorBody(refused.text),
    'no directory group of user bruno@example.org grants profile "employees"; a device does not register itself into it',
  );
  assert.equal(JSON.stringify(await portal.admin.devices()), devicesBefore, 'no device registered');
  assert.ok(!(await portal.admin.users()).includes('Bruno@Example.org'), 'and no user made');
});

test('once the directory deleted the person, a certificate naming them in other letters makes no user again', async () => {
  const scimId = await provision('Carla.Moreau@example.org', ['VPN Staff']);
  const laptop = await enroll('CASE-LAPTOP-3', 'carla.moreau@example.org').answer;
  assert.equal(laptop.status, 200, laptop.text);

  const deleted = await scim.send('DELETE', `Users/${scimId}`);
  assert.equal(deleted.status, 204);
  assert.ok(
    !(await portal.admin.users()).some((userId) => userId.toLowerCase() === 'carla.moreau@example.org'),
    'the user and the laptop are gone',
  );

  // Her laptop renews its certificate, and her phone enrolls, both still valid in the MDM.
  for (const [serial, email] of [
    ['CASE-LAPTOP-3', 'carla.moreau@example.org'],
    ['CASE-PHONE-3', 'CARLA.MOREAU@EXAMPLE.ORG'],
  ] as const) {
    const refused = await enroll(serial, email).answer;
    assert.equal(refused.status, 403, refused.text);
    assert.match(errorBody(refused.text), /^the client certificate's user was destroyed here;/);
  }
  assert.ok(
    !(await portal.admin.users()).some((userId) => userId.toLowerCase() === 'carla.moreau@example.org'),
    'no user is made again, in any letters',
  );

  // The directory assigns her again: her devices register themselves for the User it makes.
  await provision('Carla.Moreau@example.org', ['VPN Returners']);
  const back = await enroll('CASE-PHONE-3', 'CARLA.MOREAU@EXAMPLE.ORG').answer;
  assert.equal(back.status, 200, back.text);
  assert.deepEqual(
    (await portal.admin.devices()).devices
      .filter((device) => device.serial === 'CASE-PHONE-3')
      .map((device) => device.user_id),
    ['Carla.Moreau@example.org'],
    'the directory made her again',
  );
});

test('of two directory users whose names differ only in case, kept from before, a certificate naming one exactly registers for that one', async () => {
  await provision('dana@example.org', ['VPN Staff']);
  // Her twin, as a directory's second POST made it before userNames were compared letter case
  // aside: a SCIM user without the name key, in the staff group too.
  const db = portal.portal.ctx.db;
  const made = '2026-03-02T09:00:00+00:00';
  await db
    .insertInto('users')
    .values({ user_id: 'Dana@Example.org', created_at: made, last_seen: made, auth_data: null })
    .execute();
  const twin = randomUUID();
  await db
    .insertInto('scim_users')
    .values({
      scim_id: twin,
      user_id: 'Dana@Example.org',
      external_id: null,
      attributes: '{}',
      created_at: made,
      updated_at: made,
    })
    .execute();
  const staff = resourcesOf<{ id: string }>(
    await scim.send('GET', `Groups?filter=${encodeURIComponent('displayName eq "VPN Staff"')}`),
  );
  await scim.send(
    'PATCH',
    `Groups/${staff[0]?.id ?? ''}`,
    patchOp({ op: 'Add', path: 'members', value: [{ value: twin }] }),
  );

  for (const [serial, email] of [
    ['TWIN-1', 'Dana@Example.org'],
    ['TWIN-2', 'dana@example.org'],
  ] as const) {
    const enrolled = await enroll(serial, email).answer;
    assert.equal(enrolled.status, 200, enrolled.text);
    assert.deepEqual(
      (await portal.admin.devices()).devices
        .filter((device) => device.serial === serial)
        .map((device) => device.user_id),
      [email],
      'the twin named exactly',
    );
  }
});
