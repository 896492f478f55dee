// A key's rights are checked in the transaction of what it changes: a key of the name made between
// a limited caller's check and its revocation (an administrator re-making "mdm" for every
// profile) must not be revoked by a caller that could never have revoked it ("a caller may
// revoke only keys that hold no more than it does"), and a caller revoked between its check and
// the key it makes must not make it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  callerKeyOf,
  createAdminKey,
  createAdminKeyForCaller,
  listAdminKeys,
  revokeAdminKey,
  revokeAdminKeyForCaller,
} from '../../../src/core/access/index.js';
import type { AdminCall, AdminCaller } from '../../../src/core/admin-call.js';
import type { PortalContext } from '../../../src/core/context.js';
import type { PortalEvents } from '../../../src/core/events.js';
import { makeAdminKey, ManualClock, twoProfiles } from '../../support/admin-keys.js';
import { startTestPortal } from '../../support/test-portal.js';

/**
 * The context of `call`, with `race` run (once) just before the call's first
 * change begins: after its checks outside the transaction, before anything inside it.
 */
function raceBeforeChange(
  base: PortalContext,
  call: AdminCall,
  race: () => Promise<unknown>,
): { readonly ctx: PortalContext; readonly raced: () => boolean } {
  const view = base.events.forCall(call);
  let raced = false;
  const events = new Proxy(view, {
    get(target, property, receiver) {
      if (property !== 'change') return Reflect.get(target, property, receiver) as unknown;
      return async (...args: Parameters<PortalEvents['change']>) => {
        if (!raced) {
          raced = true;
          await race();
        }
        return (target.change as (...a: typeof args) => unknown).apply(target, args);
      };
    },
  });
  return { ctx: { ...base, call, events }, raced: () => raced };
}

test('a key limited to a profile does not revoke a key for every profile made between its check and its revocation', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());
  await makeAdminKey(portal, 'desk', { scope: 'admin', profiles: ['employees'] });
  const base = portal.portal.ctx;
  const row = (await listAdminKeys(base)).find((key) => key.name === 'desk');
  assert.ok(row !== undefined);
  const desk: AdminCaller = { kind: 'admin-key', key: callerKeyOf(row), sourceAddress: '127.0.0.1' };
  const call = { caller: desk, name: 'revoke_admin_key', parameters: { name: 'mdm' }, successStatus: 200 };
  // The administrator's create_admin_key (every profile, scope admin) commits just after the
  // limited key's check read the keys named "mdm" (none then) and before its revocation runs.
  const { ctx, raced } = raceBeforeChange(base, call, () =>
    createAdminKey(base, { name: 'mdm', scope: 'admin', profiles: null, expiresIn: null, allowList: null }, [
      'employees',
      'guests',
    ]),
  );
  await revokeAdminKeyForCaller(ctx, 'mdm').catch(() => undefined);
  assert.ok(raced(), 'the revocation ran its change');
  const mdm = (await listAdminKeys(base)).filter((key) => key.name === 'mdm');
  assert.equal(mdm.length, 1);
  assert.equal(
    mdm[0]?.revokedAt,
    null,
    'key "desk" (limited to employees) revoked key "mdm", which holds every profile',
  );
});

test('a key revoked between its check and the key it makes makes none', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles, clock: new ManualClock() });
  t.after(() => portal.close());
  await makeAdminKey(portal, 'desk', { scope: 'admin' });
  const base = portal.portal.ctx;
  const row = (await listAdminKeys(base)).find((key) => key.name === 'desk');
  assert.ok(row !== undefined);
  const desk: AdminCaller = { kind: 'admin-key', key: callerKeyOf(row), sourceAddress: '127.0.0.1' };
  const call = { caller: desk, name: 'create_admin_key', parameters: { name: 'spare' }, successStatus: 200 };
  // An administrator revokes "desk" just after its rights were read, before the key is made.
  const { ctx, raced } = raceBeforeChange(base, call, () => revokeAdminKey(base, 'desk'));
  await assert.rejects(
    createAdminKeyForCaller(ctx, { name: 'spare', scope: 'admin', profiles: null, expiresIn: null, allowList: null }),
    /is gone/,
  );
  assert.ok(raced(), 'the key was made in a change');
  assert.deepEqual(
    (await listAdminKeys(base)).filter((key) => key.name === 'spare'),
    [],
    'the revoked key "desk" made "spare"',
  );
});
