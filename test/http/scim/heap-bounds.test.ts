// The SCIM surface within the portal's 192 MB heap, on a portal run as its own process with
// that cap (as its shebang sets it): bodies of millions of tiny values within the size limit
// are refused with 400 before they are parsed, and a group of 100,000 members is listed, read,
// read without its members and patched, the portal answering throughout.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { TOO_MANY_VALUES } from '../../../src/http/plumbing/json-body.js';
import { SCIM_BODY_LIMIT_BYTES } from '../../../src/http/scim/surface.js';
import { makeAdminKey } from '../../support/admin-keys.js';
import { PortalProcess } from '../../support/portal-process.js';
import { patchOp, seedScimGroup, seedScimUsers } from '../../support/scim-client.js';
import { startTestPortal, testPortalConfigFile } from '../../support/test-portal.js';

const SCIM = 'application/scim+json';
const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
const config = { scim: { allowList: ['127.0.0.0/8'] }, logLevel: 'info' as const };

/** `opening` + `entry` repeated, comma-separated, + `closing`: as long as the body limit allows. */
function filling(opening: string, entry: string, closing: string): string {
  const room = SCIM_BODY_LIMIT_BYTES - opening.length - closing.length;
  const count = Math.floor((room + 1) / (entry.length + 1));
  return `${opening}${Array.from({ length: count }, () => entry).join(',')}${closing}`;
}

test('under a 192 MB heap, bodies of millions of tiny values are refused with 400 and a group of 100,000 members is listed, read and patched, the portal staying up', async (t) => {
  const portal = await startTestPortal({ config });
  t.after(() => portal.close());
  const key = await makeAdminKey(portal, 'entra', { scope: 'scim' });
  const ids = await seedScimUsers(portal, 100_003);
  const everyone = await seedScimGroup(portal, 'All staff', ids.slice(0, 100_000));
  const board = await seedScimGroup(portal, 'Board', ids.slice(100_000));

  // The same database and keys, served by a process of its own with the CLI's heap cap.
  const configFile = path.join(portal.dataDir, 'portal.json');
  writeFileSync(configFile, JSON.stringify(testPortalConfigFile(config, portal.dataDir, portal.database)));
  const capped = new PortalProcess(configFile, { nodeOptions: '--max-old-space-size=192' });
  t.after(() => capped.stop());
  const base = `${await capped.ready()}/vpn-user-portal/scim/v2/`;
  const send = async (method: string, target: string, body?: string) => {
    const response = await fetch(`${base}${target}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': SCIM }) },
      ...(body === undefined ? {} : { body }),
    });
    return { status: response.status, body: JSON.parse(await response.text()) as Record<string, unknown> };
  };

  const hostile: readonly [string, string][] = [
    ['[{},{},…]', filling('[', '{}', ']')],
    ['[[],[],…]', filling('[', '[]', ']')],
    ['a group of short member ids', filling('{"displayName":"x","members":[', '{"value":"123456"}', ']}')],
  ];
  for (const [what, body] of hostile) {
    assert.ok(body.length <= SCIM_BODY_LIMIT_BYTES, what);
    const refused = await send('POST', 'Groups', body);
    assert.equal(refused.status, 400, `${what}: ${JSON.stringify(refused.body)}`);
    assert.deepEqual(refused.body, {
      schemas: [ERROR_SCHEMA],
      status: '400',
      scimType: 'invalidSyntax',
      detail: TOO_MANY_VALUES,
    });
  }
  // Two at once: each refused, by its values or, waiting for its turn too long, as busy.
  const both = await Promise.all(hostile.slice(0, 2).map(([, body]) => send('POST', 'Groups', body)));
  for (const answer of both) assert.ok([400, 503].includes(answer.status), JSON.stringify(answer.body));

  const list = await send('GET', 'Groups');
  assert.equal(list.status, 200);
  const listed = list.body['Resources'] as Record<string, unknown>[];
  assert.deepEqual(
    listed.map((group) => [group['displayName'], (group['members'] as unknown[] | undefined)?.length ?? null]),
    [
      ['All staff', null],
      ['Board', 3],
    ],
    'a group over the list bound is listed without its members',
  );

  const reads = await Promise.all([send('GET', `Groups/${everyone}`), send('GET', `Groups/${everyone}`)]);
  for (const read of reads) {
    assert.equal(read.status, 200);
    assert.equal((read.body['members'] as unknown[]).length, 100_000);
  }
  const without = await send('GET', `Groups/${everyone}?excludedAttributes=members`);
  assert.equal(without.status, 200);
  assert.equal(without.body['displayName'], 'All staff');
  assert.equal(Object.hasOwn(without.body, 'members'), false);

  const patched = await send(
    'PATCH',
    `Groups/${everyone}`,
    JSON.stringify(patchOp({ op: 'remove', path: `members[value eq "${ids[0]}"]` })),
  );
  assert.equal(patched.status, 200, JSON.stringify(patched.body).slice(0, 300));
  assert.equal((patched.body['members'] as unknown[]).length, 99_999);

  assert.equal((await send('GET', `Groups/${board}`)).status, 200);
  assert.equal(capped.child.exitCode, null, 'the portal is still running');
  assert.deepEqual(capped.errors(), []);
});
