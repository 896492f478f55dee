// An enrollment token's `valid_for` as the use case checks it, behind the Admin API's parameter
// rules: a duration past any date JavaScript holds is the same 400 as one over P90D, never a
// 500 from writing an expiry that does not exist. And a token whose profile left the
// configuration: the device is refused as for any token it cannot use, told nothing of the
// profiles there are, the token keeps its use, and the listing says `profile-removed`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  createEnrollmentToken,
  enrollmentTokenInfo,
  listEnrollmentTokens,
  redeemEnrollmentToken,
} from '../../../src/core/enrollment/index.js';
import { PortalError } from '../../../src/core/errors.js';
import { asProfileId, asUserId, asWireGuardKey } from '../../../src/shared/ids.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { ManualClock } from '../../support/admin-keys.js';
import { startTestPortal } from '../../support/test-portal.js';

test('a token valid for longer than any date, or for P8000Y, is refused as over P90D and nothing is stored', async (t) => {
  const portal = await startTestPortal({ clock: new ManualClock() });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  for (const validFor of ['P8000Y', 'P999999999Y', 'PT99999999999999999999S']) {
    await assert.rejects(
      createEnrollmentToken(ctx, {
        userId: asUserId('alice'),
        profileId: asProfileId('employees'),
        displayName: undefined,
        expiresIn: undefined,
        uses: 1,
        validFor,
      }),
      (error: unknown) => {
        assert.ok(error instanceof PortalError, `${validFor}: ${String(error)}`);
        assert.equal(error.message, 'invalid value for "valid_for": a duration longer than zero and at most P90D');
        return true;
      },
    );
  }
  assert.deepEqual(await ctx.db.selectFrom('enrollment_tokens').selectAll().execute(), []);
});

test('a token whose profile was taken out of the configuration is refused as gone, naming no other profile, and keeps its use', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  const made = await createEnrollmentToken(ctx, {
    userId: asUserId('alice'),
    profileId: asProfileId('employees'),
    displayName: undefined,
    expiresIn: undefined,
    uses: 1,
    validFor: 'PT1H',
  });
  // The portal restarted with another configuration: `employees` is gone, `staff` is new.
  const [kept] = ctx.config.profiles;
  assert.ok(kept !== undefined);
  const config = { ...ctx.config, profiles: [{ ...kept, profileId: asProfileId('staff') }] };
  await assert.rejects(
    redeemEnrollmentToken(
      { ...ctx, config },
      {
        token: made.token,
        publicKey: asWireGuardKey(generateWireGuardKeyPair().publicKey),
        csr: undefined,
        preferTcp: false,
        accept: undefined,
      },
    ),
    (error: unknown) => {
      assert.ok(error instanceof PortalError, String(error));
      assert.equal(error.code, 'gone');
      assert.equal(error.message, "the enrollment token's profile is no longer offered");
      return true;
    },
  );
  const [row] = await ctx.db.selectFrom('enrollment_tokens').select(['uses_left']).execute();
  assert.equal(Number(row?.uses_left), 1, 'no use taken');
  assert.deepEqual(await ctx.db.selectFrom('wg_peers').select('user_id').execute(), []);

  // The listing says why the device is refused, and that it would be usable should the profile return.
  const [listed] = await listEnrollmentTokens(ctx, undefined);
  assert.ok(listed !== undefined);
  assert.equal(enrollmentTokenInfo({ ...ctx, config }, listed, ctx.clock.now()).state, 'profile-removed');
  assert.equal(enrollmentTokenInfo(ctx, listed, ctx.clock.now()).state, 'usable');
});
