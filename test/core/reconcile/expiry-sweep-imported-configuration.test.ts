// A configuration another process wrote — `vpn-portal import eduvpn`, run beside the serving
// portal — tells the portal's scheduler nothing, yet must leave its node within seconds of its
// expiry, not at the next full pass (an hour away here), also when a node pass put it there. A
// real agent with wireguard-go in a namespace.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PortalEvents } from '../../../src/core/events.js';
import { importEduVpn } from '../../../src/core/importing/index.js';
import { formatAtom } from '../../../src/shared/time.js';
import { eduVpnPeer, eduVpnUser, emptyRecords, inMemoryDeployment } from '../../support/in-memory-eduvpn.js';
import { startPortalWithNode } from '../../support/portal-with-node.js';
import { until } from '../../support/until.js';

/** The imported configuration lives this long from the import… */
const LIFETIME_MS = 8_000;
/** …and is off its node this soon after (the scheduler reads the next expiry every 5 s). */
const REACH_LIMIT_MS = 8_000;

test('a configuration the eduVPN import brought beside the serving portal leaves its node within seconds of its expiry', async (t) => {
  const lab = await startPortalWithNode({
    config: (nodeUrl) => ({
      reconcileInterval: 'PT1H',
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          wRangeFour: '10.44.0.0/24',
          wRangeSix: 'fd44::/64',
          defaultGateway: false,
          nodeUrl,
        },
      ],
    }),
  });
  t.after(lab.close);
  const { portal } = lab;
  // Bob's configuration (90 days) is the earliest expiry the serving portal knows.
  assert.equal((await portal.post('/create', { user_id: 'bob', profile_id: 'employees' })).status, 200);
  await portal.reconcile();

  // The import runs as its own process would: its events reach no listener of the serving portal.
  const ctx = portal.portal.ctx;
  const records = emptyRecords();
  records.users = [eduVpnUser('vera')];
  const expiresAt = new Date(Date.now() + LIFETIME_MS);
  const imported = eduVpnPeer('vera', 7, { expiresAt: formatAtom(expiresAt) });
  records.wireGuardPeers = [imported];
  const outcome = await importEduVpn({ ...ctx, events: new PortalEvents(ctx.logger) }, inMemoryDeployment(records));
  assert.deepEqual(outcome.plan.conflicts, []);
  // The node restarts: the pass that gives its peers back (not a full pass) brings vera's too.
  await lab.stopAgent();
  await lab.startAgent();
  await until(
    'the imported peer on the node',
    async () => (await lab.peersOnNode()).has(imported.publicKey),
    LIFETIME_MS / 2,
  );

  await until(
    'the imported peer, expired, is off the node',
    async () => !(await lab.peersOnNode()).has(imported.publicKey),
    LIFETIME_MS + REACH_LIMIT_MS,
  );
  assert.ok(Date.now() >= expiresAt.getTime() - 1_000, 'not before it expired');
  assert.deepEqual(await portal.admin.userConfigurationList('vera'), []);
  assert.equal((await lab.peersOnNode()).size, 1, 'bob’s peer stays');
});
