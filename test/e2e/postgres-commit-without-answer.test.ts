// A change whose COMMIT gets no answer within `databaseTimeout` while the connection stays open
// (a network path that swallows the answer, a commit stuck on a slow disk or standby) is
// answered 503 in that time, like every call that waited that long, and what really happened is
// read back behind it. A disable_user that committed after all reaches the node within seconds
// (its tunnels end), not at the next full reconcile pass an hour away; one that did not commit
// leaves the user enabled and its tunnels as they were, and can no longer commit. A proxy
// between the portal and a PostgreSQL server of the test's own withholds the COMMIT or its
// answer; the node is a real agent with wireguard-go in a namespace.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { connectDatabase } from '../../src/storage/database.js';
import type { WireGuardKey } from '../../src/shared/ids.js';
import { wireGuardPublicKey } from '../../src/wireguard/keys.js';
import { capturedLog } from '../support/captured-log.js';
import { startPortalWithNode } from '../support/portal-with-node.js';
import { privateDatabaseFor } from '../support/private-postgres.js';
import { startPostgresCutter } from '../support/tcp-proxies.js';
import { parseWireGuardFile } from '../support/wireguard-file.js';

const TIMEOUT_MS = 2000;
/** Scheduling on a busy test machine. */
const MARGIN_MS = 2000;

for (const mode of ['answer-withheld', 'withheld'] as const) {
  const committed = mode === 'answer-withheld';
  const story = committed
    ? 'the server committed it: the tunnel leaves the node within seconds'
    : 'the server never got it: the user stays enabled with its tunnel';
  test(`PostgreSQL: a disable_user whose COMMIT gets no answer in time answers 503 within databaseTimeout, and is settled behind the call (${story})`, async (t) => {
    const { url, atEnd } = await privateDatabaseFor(t);
    const cutter = await startPostgresCutter(url);
    atEnd(() => cutter.close());
    const log = capturedLog('info');
    const lab = await startPortalWithNode({
      database: cutter.url,
      logger: log.logger,
      config: (nodeUrl) => ({
        databaseTimeout: 'PT2S',
        // Unnamed statements: each statement's text is on the wire for the proxy to find.
        databasePreparedStatements: false,
        // The next full pass is far away: only the read back can make the node follow.
        reconcileInterval: 'PT1H',
        ProfileList: [
          {
            profileId: 'employees',
            displayName: 'Employees',
            hostName: 'vpn.example.org',
            wRangeFour: '10.53.0.0/24',
            wRangeSix: 'fd53::/64',
            nodeUrl,
          },
        ],
      }),
    });
    atEnd(() => lab.close());
    const created = await lab.portal.post('/create', { user_id: 'alice', profile_id: 'employees' });
    assert.equal(created.status, 200, created.text);
    const key = wireGuardPublicKey(parseWireGuardFile(created.text).interface.get('PrivateKey') as WireGuardKey);
    assert.ok((await lab.peersOnNode()).has(key));

    const cut = cutter.cutNextCommit('set "is_disabled"', mode);
    const startedAt = performance.now();
    const response = await lab.portal.post('/disable_user', { user_id: 'alice' });
    const elapsedMs = performance.now() - startedAt;
    await cut;
    assert.equal(response.status, 503, response.text);
    assert.ok(elapsedMs <= TIMEOUT_MS + MARGIN_MS, `answered after ${Math.round(elapsedMs)} ms`);

    const readBack = async () => {
      for (;;) {
        const line = log.lines().find((logged) => /read back: it/.test(logged.msg ?? ''));
        if (line !== undefined) return line.msg ?? '';
        assert.ok(performance.now() - startedAt < 15_000, `nothing read back:\n${log.text()}`);
        await sleep(100);
      }
    };
    assert.match(await readBack(), committed ? /it committed/ : /did not commit, and never will/);

    const db = connectDatabase({ dialect: 'postgres', url });
    atEnd(() => db.destroy());
    const alice = await db.selectFrom('users').select('is_disabled').where('user_id', '=', 'alice').executeTakeFirst();
    assert.equal(Number(alice?.is_disabled), committed ? 1 : 0, 'the database says what the read back said');
    if (committed) {
      for (;;) {
        if (!(await lab.peersOnNode()).has(key)) break;
        assert.ok(performance.now() - startedAt < 15_000, 'the disabled user’s tunnel is still on the node');
        await sleep(100);
      }
    } else {
      // Still there once the pass that a late commit would have asked for had its chance.
      await lab.portal.reconcile();
      assert.ok((await lab.peersOnNode()).has(key));
      const again = await lab.portal.post('/disable_user', { user_id: 'alice' });
      assert.equal(again.status, 204, again.text);
      assert.ok(!(await lab.peersOnNode()).has(key));
    }
  });
}
