// The admin key rule for each kind of caller, on a real database: a key made never holds more
// than its maker (scope, profiles, allow-list, expiry) and a caller revokes only keys that hold
// no more than it does. The secret, a console session made with it and the command line hold
// every right; an admin key, and a console session made with one, what the key's row holds; an
// OpenID session exactly what its claims granted, with no allow-list or end of its own.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import {
  callerKeyOf,
  createAdminKeyForCaller,
  listAdminKeys,
  revokeAdminKeyForCaller,
  type AdminKeySpec,
} from '../../../src/core/access/index.js';
import {
  commandLineCall,
  unauthenticatedCaller,
  type AdminCaller,
  type CallerKey,
} from '../../../src/core/admin-call.js';
import type { PortalContext } from '../../../src/core/context.js';
import { PortalError } from '../../../src/core/errors.js';
import { asProfileId } from '../../../src/shared/ids.js';
import { makeAdminKey, ManualClock, twoProfiles } from '../../support/admin-keys.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

const employees = [asProfileId('employees')];
const guests = [asProfileId('guests')];
const ADDRESS = '127.0.0.1';

async function stand(t: TestContext): Promise<TestPortal> {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());
  await makeAdminKey(portal, 'root', { scope: 'admin' });
  await makeAdminKey(portal, 'desk', {
    scope: 'admin',
    profiles: ['employees'],
    allowList: ['10.0.0.0/8'],
    expiresIn: 'P30D',
  });
  await makeAdminKey(portal, 'guests-desk', { scope: 'read', profiles: ['guests'] });
  await makeAdminKey(portal, 'employees-forever', { scope: 'read', profiles: ['employees'] });
  return portal;
}

/** The portal's context as a call by `caller` (what the HTTP layer hands a use case). */
function as(portal: TestPortal, caller: AdminCaller): PortalContext {
  const ctx = portal.portal.ctx;
  const call = { caller, name: 'create_admin_key', parameters: {}, successStatus: 200 };
  return { ...ctx, call, events: ctx.events.forCall(call) };
}

async function heldKey(portal: TestPortal, name: string): Promise<CallerKey> {
  const row = (await listAdminKeys(portal.portal.ctx)).find((key) => key.name === name && key.revokedAt === null);
  assert.ok(row !== undefined, name);
  return callerKeyOf(row);
}

async function keyCaller(portal: TestPortal, name: string): Promise<AdminCaller> {
  return { kind: 'admin-key', key: await heldKey(portal, name), sourceAddress: ADDRESS };
}

function spec(name: string, rights: Partial<AdminKeySpec> = {}): AdminKeySpec {
  return { name, scope: 'read', profiles: null, expiresIn: null, allowList: null, ...rights };
}

async function refused(attempt: Promise<unknown>, message: string): Promise<void> {
  await assert.rejects(attempt, (error: unknown) => {
    assert.ok(error instanceof PortalError, String(error));
    assert.equal(error.code, 'not-allowed');
    assert.equal(error.message, message);
    return true;
  });
}

async function liveNames(portal: TestPortal): Promise<string[]> {
  return (await listAdminKeys(portal.portal.ctx))
    .filter((key) => key.revokedAt === null)
    .map((key) => key.name)
    .sort();
}

test('the secret, a console session made with it, and the command line make keys of every right and revoke any key', async (t) => {
  const portal = await stand(t);
  const callers: AdminCaller[] = [
    { kind: 'secret', sourceAddress: ADDRESS },
    { kind: 'console-session', signedInWith: { kind: 'secret' }, sourceAddress: ADDRESS },
    commandLineCall('create_admin_key', {}).caller,
  ];
  for (const [index, caller] of callers.entries()) {
    const ctx = as(portal, caller);
    const made = await createAdminKeyForCaller(ctx, spec(`unlimited-${index}`, { scope: 'admin' }));
    assert.deepEqual(
      [made.key.scope, made.key.profiles, made.key.allowList, made.key.expiresAt],
      ['admin', null, null, null],
    );
    assert.equal(await revokeAdminKeyForCaller(ctx, `unlimited-${index}`), 1);
  }
  assert.equal(await revokeAdminKeyForCaller(as(portal, callers[0] as AdminCaller), 'root'), 1);
});

test('an admin key makes only keys within its scope, profiles, allow-list and expiry, and revokes only keys that hold no more', async (t) => {
  const portal = await stand(t);
  const desk = await keyCaller(portal, 'desk');
  const ctx = as(portal, desk);
  const within = { profiles: employees, allowList: ['10.1.0.0/16'], expiresIn: 'P7D' };
  const made = await createAdminKeyForCaller(ctx, spec('desk-child', { scope: 'write', ...within }));
  assert.equal(made.key.expiresAt, '2026-03-09T09:00:00+00:00');

  const no = 'key "desk" may not make key "wider"';
  await refused(
    createAdminKeyForCaller(ctx, spec('wider', { ...within, profiles: null })),
    `${no}: every profile is more than its own profiles (employees)`,
  );
  await refused(
    createAdminKeyForCaller(ctx, spec('wider', { ...within, profiles: guests })),
    `${no}: profiles guests are outside its own (employees)`,
  );
  await refused(
    createAdminKeyForCaller(ctx, spec('wider', { ...within, allowList: null })),
    `${no}: use from anywhere in adminApi.allowList is wider than its own allow-list (10.0.0.0/8)`,
  );
  await refused(
    createAdminKeyForCaller(ctx, spec('wider', { ...within, allowList: ['192.0.2.0/24'] })),
    `${no}: allow-list 192.0.2.0/24 is wider than its own (10.0.0.0/8)`,
  );
  const outlive = `${no}: it would outlive the calling key, which expires at 2026-04-01T09:00:00+00:00 (give a shorter expires_in)`;
  await refused(createAdminKeyForCaller(ctx, spec('wider', { ...within, expiresIn: null })), outlive);
  await refused(createAdminKeyForCaller(ctx, spec('wider', { ...within, expiresIn: 'P31D' })), outlive);

  await refused(
    revokeAdminKeyForCaller(ctx, 'root'),
    'key "desk" may not revoke key "root": every profile is more than its own profiles (employees)',
  );
  await refused(
    revokeAdminKeyForCaller(ctx, 'guests-desk'),
    'key "desk" may not revoke key "guests-desk": profiles guests are outside its own (employees)',
  );
  await refused(
    revokeAdminKeyForCaller(ctx, 'employees-forever'),
    'key "desk" may not revoke key "employees-forever": use from anywhere in adminApi.allowList is wider than its own allow-list (10.0.0.0/8)',
  );
  assert.equal(await revokeAdminKeyForCaller(ctx, 'desk-child'), 1, 'a key it made holds no more');
  assert.deepEqual(
    await liveNames(portal),
    ['desk', 'employees-forever', 'guests-desk', 'root'],
    'nothing else changed',
  );
});

test('a key revokes no key that outlives it, though every other right is within its own', async (t) => {
  const portal = await stand(t);
  await makeAdminKey(portal, 'short', { scope: 'read', expiresIn: 'P1D' });
  await makeAdminKey(portal, 'shorter', { scope: 'read', expiresIn: 'PT1H' });
  const ctx = as(portal, await keyCaller(portal, 'short'));
  await refused(
    revokeAdminKeyForCaller(ctx, 'guests-desk'),
    'key "short" may not revoke key "guests-desk": it never expires, after the calling key, which expires at 2026-03-03T09:00:00+00:00',
  );
  assert.equal(await revokeAdminKeyForCaller(ctx, 'shorter'), 1);
  assert.equal(await revokeAdminKeyForCaller(ctx, 'short'), 1, 'a key may revoke itself');
});

test('a console session made with an admin key holds exactly what the key holds, read from its row', async (t) => {
  const portal = await stand(t);
  const session: AdminCaller = {
    kind: 'console-session',
    signedInWith: { kind: 'admin-key', key: await heldKey(portal, 'desk') },
    sourceAddress: ADDRESS,
  };
  const ctx = as(portal, session);
  await refused(
    createAdminKeyForCaller(ctx, spec('wide', { scope: 'admin' })),
    'key "desk" may not make key "wide": every profile is more than its own profiles (employees)',
  );
  await refused(
    revokeAdminKeyForCaller(ctx, 'root'),
    'key "desk" may not revoke key "root": every profile is more than its own profiles (employees)',
  );
  const made = await createAdminKeyForCaller(
    ctx,
    spec('from-session', { profiles: employees, allowList: ['10.0.0.0/8'], expiresIn: 'P30D' }),
  );
  assert.equal(made.key.expiresAt, '2026-04-01T09:00:00+00:00');

  // Revoked meanwhile, the key holds nothing: the session's copy of its rights is not trusted.
  assert.equal(await revokeAdminKeyForCaller(as(portal, { kind: 'secret', sourceAddress: ADDRESS }), 'desk'), 1);
  await refused(
    createAdminKeyForCaller(ctx, spec('after', { profiles: employees, allowList: ['10.0.0.0/8'], expiresIn: 'P1D' })),
    'key "desk" is gone',
  );
});

test('an OpenID session holds exactly what its claims granted: no key beyond its scope or profiles, and no allow-list or end of its own', async (t) => {
  const portal = await stand(t);
  const oidc: AdminCaller = {
    kind: 'oidc-session',
    subject: 'alice',
    scope: 'write',
    profiles: employees,
    sourceAddress: ADDRESS,
  };
  const ctx = as(portal, oidc);
  await refused(
    createAdminKeyForCaller(ctx, spec('wide', { scope: 'admin', profiles: employees })),
    'oidc:alice may not make key "wide": scope "admin" is more than its own scope "write"',
  );
  await refused(
    createAdminKeyForCaller(ctx, spec('wide')),
    'oidc:alice may not make key "wide": every profile is more than its own profiles (employees)',
  );
  await refused(
    createAdminKeyForCaller(ctx, spec('wide', { profiles: guests })),
    'oidc:alice may not make key "wide": profiles guests are outside its own (employees)',
  );
  await refused(
    revokeAdminKeyForCaller(ctx, 'root'),
    'oidc:alice may not revoke key "root": scope "admin" is more than its own scope "write"',
  );
  await refused(
    revokeAdminKeyForCaller(ctx, 'guests-desk'),
    'oidc:alice may not revoke key "guests-desk": profiles guests are outside its own (employees)',
  );
  const made = await createAdminKeyForCaller(ctx, spec('employees-reader', { profiles: employees }));
  assert.deepEqual([made.key.allowList, made.key.expiresAt], [null, null]);
  assert.equal(await revokeAdminKeyForCaller(ctx, 'employees-forever'), 1);

  const everyProfile = as(portal, { ...oidc, scope: 'admin', profiles: null });
  assert.equal(
    (await createAdminKeyForCaller(everyProfile, spec('everything', { scope: 'admin' }))).key.scope,
    'admin',
  );
  assert.equal(await revokeAdminKeyForCaller(everyProfile, 'root'), 1, 'claims of every right hold every right');
});

test('a caller without a valid credential makes and revokes nothing', async (t) => {
  const portal = await stand(t);
  const ctx = as(portal, unauthenticatedCaller(ADDRESS, 'old-key'));
  await refused(createAdminKeyForCaller(ctx, spec('any')), 'key "old-key" holds no right to admin keys');
  await refused(revokeAdminKeyForCaller(ctx, 'guests-desk'), 'key "old-key" holds no right to admin keys');
  assert.deepEqual(await liveNames(portal), ['desk', 'employees-forever', 'guests-desk', 'root']);
});

test('a scim key is made by a key of scope admin, never limited to profiles, and makes no key itself', async (t) => {
  const portal = await stand(t);
  await makeAdminKey(portal, 'writer', { scope: 'write' });
  const root = as(portal, await keyCaller(portal, 'root'));
  const made = await createAdminKeyForCaller(root, spec('entra', { scope: 'scim' }));
  assert.deepEqual([made.key.scope, made.key.profiles], ['scim', null]);
  await assert.rejects(createAdminKeyForCaller(root, spec('entra-employees', { scope: 'scim', profiles: employees })), {
    message: 'invalid value for "profiles": a scim key acts on whole users and cannot be limited to profiles',
  });
  await refused(
    createAdminKeyForCaller(as(portal, await keyCaller(portal, 'writer')), spec('okta', { scope: 'scim' })),
    'key "writer" may not make key "okta": scope "scim" is more than its own scope "write"',
  );
  await refused(
    createAdminKeyForCaller(as(portal, await keyCaller(portal, 'entra')), spec('reader', { scope: 'read' })),
    'key "entra" may not make key "reader": scope "read" is more than its own scope "scim"',
  );
  assert.deepEqual(await liveNames(portal), ['desk', 'employees-forever', 'entra', 'guests-desk', 'root', 'writer']);
});
