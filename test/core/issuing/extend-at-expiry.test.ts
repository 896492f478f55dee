// An extend that began just before the configuration expired and reaches its transaction just
// after must not bring it back: by then a reconcile pass may have taken the peer off its node,
// and the next one would put it back under the new expiry. The clock is a stand-in moved between
// the call's start and its change.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PortalContext } from '../../../src/core/context.js';
import type { PortalEvents } from '../../../src/core/events.js';
import { extendConfiguration } from '../../../src/core/issuing/index.js';
import { asConnectionId, asUserId } from '../../../src/shared/ids.js';
import { startTestPortal } from '../../support/test-portal.js';

test('an extend whose change comes after the expiry is refused, and the configuration stays expired', async (t) => {
  let now = new Date(Math.floor(Date.now() / 1000) * 1000);
  const portal = await startTestPortal({ clock: { now: () => now } });
  t.after(() => portal.close());
  const created = await portal.post('/create', { user_id: 'alice', profile_id: 'employees', expires_in: 'PT12H' });
  assert.equal(created.status, 200, created.text);
  const [configuration] = await portal.admin.userConfigurationList('alice');
  assert.ok(configuration !== undefined);
  const expiresAt = Date.parse(configuration.expires_at);

  // The call starts a second before the expiry; its change runs a second after it.
  now = new Date(expiresAt - 1000);
  const ctx = portal.portal.ctx;
  let extensions = 0;
  ctx.events.afterCommit((event) => {
    if (event.type === 'configuration.extended') extensions++;
  });
  const events = new Proxy(ctx.events, {
    get(target, property, receiver) {
      if (property !== 'change') return Reflect.get(target, property, receiver) as unknown;
      return (...args: Parameters<PortalEvents['change']>) => {
        now = new Date(expiresAt + 1000);
        return (target.change as (...a: typeof args) => unknown).apply(target, args);
      };
    },
  });
  const extended = extendConfiguration(
    { ...ctx, events } as PortalContext,
    asUserId('alice'),
    asConnectionId(configuration.connection_id),
    undefined,
  );
  await assert.rejects(extended, /has expired/);
  assert.equal(extensions, 0, 'no extension was recorded');
  // The portal's expiry sweep reads the moved clock too (every few seconds): it may have taken
  // the expired configuration already. What is left of it kept its expiry.
  const rows = await ctx.db.selectFrom('wg_peers').select('expires_at').execute();
  assert.ok(rows.length <= 1);
  for (const row of rows) assert.equal(row.expires_at, configuration.expires_at, 'the expiry did not move');
});
