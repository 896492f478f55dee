// Enrollment tokens with several portal instances on one PostgreSQL database: a token made by
// one instance is redeemed at another (they share the database and DATA/keys), its uses are
// taken exactly once however the redemptions are spread over the instances, and a revocation
// made on one is seen by the other at once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { generateWireGuardKeyPair } from '../../../src/wireguard/keys.js';
import { errorBody } from '../../support/raw-http.js';
import { startTestPortal, type ApiResponse, type TestPortal } from '../../support/test-portal.js';

const config: Partial<PortalConfigFile> = { enrollment: { requestsPerMinute: 10_000 } };

function enroll(portal: TestPortal, token: string): Promise<ApiResponse> {
  return portal.request(`${portal.portal.url}${portal.portal.ctx.config.basePath}/enroll`, {
    method: 'POST',
    body: new URLSearchParams({ enrollment_token: token, public_key: generateWireGuardKeyPair().publicKey }),
    headers: { accept: 'application/x-wireguard-profile' },
  });
}

test('PostgreSQL, two portal instances: 30 redemptions of a three-use token spread over both make three configurations', async (t) => {
  const first = await startTestPortal({ config });
  t.after(first.close);
  const second = await startTestPortal({ config, dataDir: first.dataDir, database: first.database });
  t.after(second.close);
  const made = await first.admin.enrollmentToken({ user_id: 'alice', profile_id: 'employees', uses: 3 });
  const answers = await Promise.all(
    Array.from({ length: 30 }, (_, index) => enroll(index % 2 === 0 ? first : second, made.enrollment_token)),
  );
  const statuses = answers.map((answer) => answer.status).sort();
  assert.deepEqual(
    statuses,
    [200, 200, 200, ...Array.from({ length: 27 }, () => 410)],
    answers.map((answer) => answer.text.slice(0, 80)).join('\n'),
  );
  assert.equal((await second.admin.userConfigurationList('alice')).length, 3);
  assert.equal((await second.admin.enrollmentTokens())[0]?.uses_left, 0);

  const other = await second.admin.enrollmentToken({ user_id: 'alice', profile_id: 'employees' });
  await first.admin.revokeEnrollmentToken('alice', other.token_id);
  const revoked = await enroll(second, other.enrollment_token);
  assert.equal(revoked.status, 410, revoked.text);
  assert.match(errorBody(revoked.text), /^enrollment token was revoked at /);
});
