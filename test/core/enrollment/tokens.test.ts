// An enrollment token's `valid_for` as the use case checks it, behind the Admin API's parameter
// rules: a duration past any date JavaScript holds is the same 400 as one over P90D, never a
// 500 from writing an expiry that does not exist.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createEnrollmentToken } from '../../../src/core/enrollment/index.js';
import { PortalError } from '../../../src/core/errors.js';
import { asProfileId, asUserId } from '../../../src/shared/ids.js';
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
