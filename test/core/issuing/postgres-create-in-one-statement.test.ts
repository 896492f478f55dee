// On PostgreSQL a plain create is one statement, one round trip to the server, which writes the
// user when new, the configuration and everything the create's listeners write; it gives up,
// writing nothing, when its case is not the one it was built for, and the create is then made
// as before. Round trips are counted at pg's own client, for the calls the test itself makes.
// A connection cut at the statement: test/storage/postgres-restart.test.ts.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { sql } from 'kysely';
import type { PortalContext } from '../../../src/core/context.js';
import { PortalError } from '../../../src/core/errors.js';
import { createConfiguration } from '../../../src/core/issuing/index.js';
import { asProfileId, asUserId } from '../../../src/shared/ids.js';
import { statementsSentBy } from '../../support/pg-statements.js';
import { onServer } from '../../support/postgres.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';
import { subscribe } from '../../support/webhook-subscriptions.js';

const AT = '2026-11-30T06:00:00+00:00';

async function stand(t: TestContext): Promise<TestPortal> {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  await subscribe(portal.portal.ctx.db, 'everything', ['*'], AT);
  await create(portal, 'first');
  return portal;
}

/** The portal's context as the Admin API's `create` call for `userId`, with the secret. */
function asCall(portal: TestPortal, userId: string): PortalContext {
  const ctx = portal.portal.ctx;
  const call = {
    caller: { kind: 'secret', sourceAddress: '192.0.2.7' },
    name: 'create',
    parameters: { user_id: userId, profile_id: 'employees' },
    successStatus: 200,
  } as const;
  return { ...ctx, call, events: ctx.events.forCall(call) };
}

/** A WireGuard create for `userId`, and the statements it sent. */
async function create(portal: TestPortal, userId: string): Promise<string[]> {
  const { statements } = await statementsSentBy(() =>
    createConfiguration(asCall(portal, userId), {
      userId: asUserId(userId),
      profileId: asProfileId('employees'),
      displayName: 'Laptop',
      preferTcp: false,
      expiresIn: undefined,
      accept: 'application/x-wireguard-profile',
    }),
  );
  return statements;
}

/** What the database holds for `userId`: its row, configurations, audit rows and webhook events. */
async function heldFor(portal: TestPortal, userId: string) {
  const { db } = portal.portal.ctx;
  const user = await db.selectFrom('users').select('is_disabled').where('user_id', '=', userId).execute();
  const peers = await db.selectFrom('wg_peers').select('public_key').where('user_id', '=', userId).execute();
  // The listings' journal (raw SQL: not in the query builder's schema).
  const journal = await sql<{ public_key: string }>`
    SELECT public_key FROM listing_changes WHERE public_key = ANY(${peers.map((peer) => peer.public_key)})`.execute(db);
  const audit = await db
    .selectFrom('audit_log')
    .select(['call', 'connection_ids'])
    .where('user_id', '=', userId)
    .execute();
  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .select(['event_type', 'payload'])
    .where('payload', 'like', `%"${userId}"%`)
    .orderBy('delivery_id')
    .execute();
  return {
    users: user.length,
    configurations: peers.length,
    journaled: journal.rows.length,
    audited: audit.map((row) => row.call),
    events: deliveries.map((row) => row.event_type),
  };
}

test('a create for a new user, then one more for that user, each reaches PostgreSQL in one statement and writes all a create writes', async (t) => {
  const portal = await stand(t);
  const generationBefore = await onServer(portal.database, async (client) =>
    Number((await client.query('SELECT sum(generation) AS g FROM listing_generation')).rows[0].g),
  );

  const forNewUser = await create(portal, 'ann');
  assert.equal(forNewUser.length, 1, forNewUser.join('\n'));
  assert.doesNotMatch(forNewUser[0] ?? '', /^begin/i);
  assert.deepEqual(await heldFor(portal, 'ann'), {
    users: 1,
    configurations: 1,
    journaled: 1,
    audited: ['create'],
    events: ['user.created', 'configuration.created'],
  });

  const forKnownUser = await create(portal, 'ann');
  assert.equal(forKnownUser.length, 1, forKnownUser.join('\n'));
  assert.deepEqual(await heldFor(portal, 'ann'), {
    users: 1,
    configurations: 2,
    journaled: 2,
    audited: ['create', 'create'],
    events: ['user.created', 'configuration.created', 'configuration.created'],
  });
  const generationAfter = await onServer(portal.database, async (client) =>
    Number((await client.query('SELECT sum(generation) AS g FROM listing_generation')).rows[0].g),
  );
  assert.equal(generationAfter, generationBefore + 2, 'each create moved the listings on');
});

test('a create that guessed its user wrong gives up its statement, writing nothing, and tries the other guess', async (t) => {
  const portal = await stand(t);
  // Another instance made bob: this one has never seen him, and guesses he is new.
  await onServer(portal.database, (client) =>
    client.query(`INSERT INTO users (user_id, created_at, last_seen, auth_data) VALUES ('bob', $1, $1, NULL)`, [AT]),
  );
  assert.equal((await create(portal, 'bob')).length, 2);
  assert.deepEqual((await heldFor(portal, 'bob')).events, ['configuration.created'], 'bob is not announced as new');

  // Another instance destroyed ann after this one made her: this one guesses she is known.
  await create(portal, 'ann');
  await onServer(portal.database, async (client) => {
    await client.query(`DELETE FROM wg_peers WHERE user_id = 'ann'`);
    await client.query(`DELETE FROM users WHERE user_id = 'ann'`);
  });
  assert.equal((await create(portal, 'ann')).length, 2);
  const ann = await heldFor(portal, 'ann');
  assert.equal(ann.configurations, 1);
  assert.deepEqual(ann.events, ['user.created', 'configuration.created', 'user.created', 'configuration.created']);
});

test('a disabled user’s create is refused as before and writes nothing', async (t) => {
  const portal = await stand(t);
  await create(portal, 'cid');
  await onServer(portal.database, (client) => client.query(`UPDATE users SET is_disabled = 1 WHERE user_id = 'cid'`));
  const before = await heldFor(portal, 'cid');
  await assert.rejects(create(portal, 'cid'), (error: unknown) => {
    assert.ok(error instanceof PortalError);
    assert.equal(error.code, 'user-disabled');
    return true;
  });
  assert.deepEqual(await heldFor(portal, 'cid'), before);
});

test('the first create of a pool makes the pool’s row in its one statement', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const statements = await create(portal, 'dee');
  assert.equal(statements.length, 1, statements.join('\n'));
  const pools = await portal.portal.ctx.db.selectFrom('ip_pools').select('next_index').execute();
  assert.deepEqual(pools, [{ next_index: 1 }]);
});

test('creates racing a disable_user of their user: every configuration stored is one the disable revoked, the others are refused', async (t) => {
  const portal = await stand(t);
  await create(portal, 'fay');
  // Eight creates in flight at all times, from before the disable until a while after it answered.
  const statuses: number[] = [];
  let disabledAnswered = false;
  const worker = async (): Promise<void> => {
    for (let after = 0; after < 3; after += disabledAnswered ? 1 : 0) {
      statuses.push((await portal.post('/create', { user_id: 'fay', profile_id: 'employees' })).status);
    }
  };
  const workers = Array.from({ length: 8 }, worker);
  while (statuses.length < 20) await new Promise((resolve) => setTimeout(resolve, 5));
  const disabled = await portal.post('/disable_user', { user_id: 'fay' });
  disabledAnswered = true;
  assert.equal(disabled.status, 204, disabled.text);
  await Promise.all(workers);
  assert.deepEqual(
    statuses.filter((status) => status !== 200 && status !== 403),
    [],
    'each create stored its configuration or was refused',
  );
  assert.ok(
    statuses.slice(-8).every((status) => status === 403),
    'the creates after the disable are refused',
  );

  const { db } = portal.portal.ctx;
  const stored = await db.selectFrom('wg_peers').select('public_key').where('user_id', '=', 'fay').execute();
  const revoked = await db
    .selectFrom('revocation_nodes')
    .innerJoin('revocations', 'revocations.revocation_id', 'revocation_nodes.revocation_id')
    .select('revocation_nodes.connection_id')
    .where('revocations.user_id', '=', 'fay')
    .execute();
  assert.deepEqual(
    stored.map((row) => row.public_key).sort(),
    revoked.map((row) => row.connection_id).sort(),
    'no configuration was stored after the disable',
  );
  assert.equal(stored.length, 1 + statuses.filter((status) => status === 200).length);
});
