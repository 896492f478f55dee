// Several portal instances on one PostgreSQL database: concurrent creates on different
// instances never share an address, lose a configuration or make a user twice; every call
// answers the same from any instance; one reconcile pass runs at a time; instances that
// start together on an empty database apply the migrations once. Real PostgreSQL (the
// throw-away server of test/run.sh), real `vpn-portal serve` processes, a real node agent.
import { EXPECTED_MIGRATIONS } from '../support/migrations.js';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { pino } from 'pino';
import { generateSecrets } from '../../src/cli/generate-secrets.js';
import { loadPortalConfig } from '../../src/config/load.js';
import type { PortalConfigFile } from '../../src/config/schema.js';
import type { WireGuardKey } from '../../src/shared/ids.js';
import { connectDatabase, openDatabase, type Db } from '../../src/storage/database.js';
import { ExclusiveLocks } from '../../src/storage/exclusive.js';
import { wireGuardPublicKey } from '../../src/wireguard/keys.js';
import { startPortalWithNode } from '../support/portal-with-node.js';
import { PortalProcess } from '../support/portal-process.js';
import { createTestDatabase, dropTestDatabase, onServer, postgresServerUrl } from '../support/postgres.js';
import { startTestPortal, UNREACHABLE_NODE } from '../support/test-portal.js';
import { parseWireGuardFile } from '../support/wireguard-file.js';

/** A fresh database on the test server, dropped after the test. */
async function freshDatabase(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const server = postgresServerUrl();
  const { name, url } = await createTestDatabase(server);
  t.after(() => dropTestDatabase(server, name));
  return url;
}

interface Issued {
  readonly userId: string;
  readonly publicKey: string;
  readonly ipFour: string;
  readonly ipSix: string;
}

/** Runs `jobs` with `concurrency` of them in flight, in order of the list. */
async function runAll<T>(jobs: readonly (() => Promise<T>)[], concurrency: number): Promise<T[]> {
  const results: T[] = new Array<T>(jobs.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < jobs.length) {
      const index = next++;
      results[index] = await (jobs[index] as () => Promise<T>)();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return results;
}

test('two portal processes on one PostgreSQL: 500 interleaved creates for overlapping users give unique addresses, lose nothing and make every user once', async (t) => {
  const databaseUrl = await freshDatabase(t);
  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-scale-out-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  // Both instances read the same configuration file and the same DATA/keys.
  const configFile = path.join(directory, 'portal.json');
  const config: PortalConfigFile = {
    baseUrl: 'http://127.0.0.1/vpn-user-portal/',
    listen: { host: '127.0.0.1', port: 0 },
    metrics: { listen: '127.0.0.1:0' },
    dataDir: 'data',
    database: databaseUrl,
    // The story is about what 32 creates at once make, not how fast: on a loaded machine a create
    // may wait longer than the default five seconds for one of the pool's connections.
    databaseTimeout: 'PT30S',
    logLevel: 'info',
    reconcileInterval: 'PT1H',
    ProfileList: [
      {
        profileId: 'employees',
        displayName: 'Employees',
        hostName: ['vpn1.example.org', 'vpn2.example.org'],
        nodeUrl: [UNREACHABLE_NODE, 'http://127.0.0.1:3'],
        wRangeFour: ['10.50.0.0/22', '10.50.4.0/22'],
        wRangeSix: ['fd50::/64', 'fd50:0:0:1::/64'],
      },
    ],
  };
  writeFileSync(configFile, JSON.stringify(config));
  await generateSecrets(loadPortalConfig(configFile), { adminApi: true, node: undefined }, () => {});
  const secret = readFileSync(path.join(directory, 'data', 'keys', 'admin-api.key'), 'utf8').trim();

  const instances = [new PortalProcess(configFile), new PortalProcess(configFile)];
  t.after(async () => {
    await Promise.all(instances.map((instance) => instance.stop()));
  });
  const bases = (await Promise.all(instances.map((instance) => instance.ready()))).map(
    (url) => `${url}/vpn-user-portal/admin/api/v1`,
  );
  const call = async (instance: number, method: 'GET' | 'POST', target: string, form?: Record<string, string>) => {
    const response = await fetch(`${bases[instance]}${target}`, {
      method,
      headers: { authorization: `Bearer ${secret}` },
      ...(form === undefined ? {} : { body: new URLSearchParams(form) }),
    });
    return { status: response.status, text: await response.text() };
  };
  const create = async (instance: number, userId: string): Promise<Issued> => {
    const response = await call(instance, 'POST', '/create', { user_id: userId, profile_id: 'employees' });
    assert.equal(
      response.status,
      200,
      `create for ${userId} on instance ${instance}: ${response.status} ${response.text}`,
    );
    const file = parseWireGuardFile(response.text);
    const [four = '', six = ''] = (file.interface.get('Address') ?? '').split(',');
    return {
      userId,
      publicKey: wireGuardPublicKey(file.interface.get('PrivateKey') as WireGuardKey),
      ipFour: four.replace(/\/\d+$/, ''),
      ipSix: six.replace(/\/\d+$/, ''),
    };
  };

  // Request i goes to instance i % 2; requests 2k and 2k+1 are for the same user and are sent
  // together, so a user's first configuration is often made on both instances at once.
  const USERS = 60;
  const userOf = (index: number) => `user${Math.floor(index / 2) % USERS}`;
  const first = await runAll(
    Array.from({ length: 500 }, (_, index) => () => create(index % 2, userOf(index))),
    32,
  );

  const db = connectDatabase({ dialect: 'postgres', url: databaseUrl });
  t.after(() => db.destroy());
  await checkState(db, first, USERS);

  // Deletes and creates interleaved on both instances: given-back addresses are taken again
  // concurrently, each by one configuration only.
  const deleted = first.filter((_, index) => index % 3 === 0).slice(0, 150);
  const mixed: (() => Promise<Issued | null>)[] = [];
  for (const [index, victim] of deleted.entries()) {
    mixed.push(async () => {
      const response = await call(index % 2, 'POST', '/delete_connection', {
        user_id: victim.userId,
        connection_id: victim.publicKey,
      });
      assert.equal(response.status, 204, `delete_connection on instance ${index % 2}: ${response.text}`);
      return null;
    });
    mixed.push(() => create((index + 1) % 2, userOf(index)));
  }
  const second = (await runAll(mixed, 32)).filter((issued): issued is Issued => issued !== null);
  const gone = new Set(deleted.map((peer) => peer.publicKey));
  const expected = [...first.filter((peer) => !gone.has(peer.publicKey)), ...second];
  assert.equal(expected.length, 500, 'as many configurations as before');
  await checkState(db, expected, USERS);

  // Users destroyed on one instance while the other creates configurations for them: each
  // create lands either before the destroy (and goes with the user) or after it (and makes the
  // user anew); no address is left taken by nobody or given back twice.
  const victims = Array.from({ length: 10 }, (_, index) => `user${index}`);
  const racing: (() => Promise<Issued | null>)[] = [];
  for (const victim of victims) {
    racing.push(() => create(1, victim));
    racing.push(async () => {
      const response = await call(0, 'POST', '/destroy', { user_id: victim });
      assert.equal(response.status, 204, `destroy ${victim}: ${response.text}`);
      return null;
    });
    racing.push(() => create(1, victim));
  }
  const third = (await runAll(racing, 32)).filter((issued): issued is Issued => issued !== null);
  const rows = await db.selectFrom('wg_peers').select(['public_key', 'user_id']).execute();
  const survivors = expected.filter((peer) => !victims.includes(peer.userId));
  const storedKeys = new Set(rows.map((row) => row.public_key));
  for (const peer of survivors)
    assert.ok(storedKeys.has(peer.publicKey), `${peer.userId}'s configuration at ${peer.ipFour} is still there`);
  const thirdKeys = new Set(third.map((peer) => peer.publicKey));
  for (const row of rows.filter((candidate) => victims.includes(candidate.user_id))) {
    assert.ok(thirdKeys.has(row.public_key), `a configuration of ${row.user_id} from before the destroy is gone`);
  }
  assert.equal(
    rows.length,
    survivors.length + rows.filter((row) => thirdKeys.has(row.public_key)).length,
    'nothing else is stored',
  );
  await checkPools(db, await db.selectFrom('wg_peers').select(['node_number', 'pool_index', 'ip_four']).execute());

  // Every call answers the same from either instance.
  for (const target of [
    '/users',
    '/disabled_users',
    '/connection_list?show_all=on',
    '/connected_users?show_all=on',
    '/user_configuration_list?user_id=user17',
  ]) {
    const [fromFirst, fromSecond] = await Promise.all([call(0, 'GET', target), call(1, 'GET', target)]);
    assert.equal(fromFirst.status, 200, `${target}: ${fromFirst.text}`);
    assert.equal(fromSecond.text, fromFirst.text, `${target} answers the same on both instances`);
  }
  const users = JSON.parse((await call(1, 'GET', '/users')).text) as { users: string[] };
  const stored = (await db.selectFrom('users').select('user_id').execute()).map((row) => row.user_id);
  assert.deepEqual(users.users, [...stored].sort(), 'every user once');
  for (const userId of Array.from({ length: USERS }, (_, index) => `user${index}`).filter(
    (id) => !victims.includes(id),
  )) {
    assert.ok(users.users.includes(userId), `${userId} is listed`);
  }

  for (const [index, instance] of instances.entries()) {
    assert.deepEqual(instance.errors(), [], `instance ${index} logged no error`);
  }
});

/** The database holds exactly `issued`, with unique addresses, and every pool accounts for each index once. */
async function checkState(db: Db, issued: readonly Issued[], users: number): Promise<void> {
  assert.equal(new Set(issued.map((peer) => peer.ipFour)).size, issued.length, 'no IPv4 address handed out twice');
  assert.equal(new Set(issued.map((peer) => peer.ipSix)).size, issued.length, 'no IPv6 address handed out twice');
  const rows = await db
    .selectFrom('wg_peers')
    .select(['public_key', 'user_id', 'ip_four', 'ip_six', 'node_number', 'pool_index'])
    .execute();
  assert.equal(rows.length, issued.length, `${issued.length} configurations stored, found ${rows.length}`);
  const stored = new Map(rows.map((row) => [row.public_key, row]));
  for (const peer of issued) {
    const row = stored.get(peer.publicKey);
    assert.ok(row !== undefined, `the configuration of ${peer.userId} at ${peer.ipFour} is stored`);
    assert.deepEqual(
      [row.user_id, row.ip_four, row.ip_six],
      [peer.userId, peer.ipFour, peer.ipSix],
      'stored as handed out',
    );
  }
  const userRows = await db.selectFrom('users').select('user_id').execute();
  assert.equal(userRows.length, users, `${users} users, each once`);

  await checkPools(db, rows);
}

/** Every index below a pool's next index is held by a configuration or given back, exactly once; no address is held twice. */
async function checkPools(
  db: Db,
  rows: readonly { node_number: number; pool_index: number; ip_four: string }[],
): Promise<void> {
  assert.equal(new Set(rows.map((row) => row.ip_four)).size, rows.length, 'no address is stored twice');
  const pools = await db.selectFrom('ip_pools').selectAll().execute();
  assert.equal(pools.length, 2, 'one pool per node');
  for (const pool of pools) {
    const used = rows.filter((row) => row.node_number === pool.node_number).map((row) => row.pool_index);
    const free = (
      await db.selectFrom('ip_pool_free').select('pool_index').where('node_number', '=', pool.node_number).execute()
    ).map((row) => row.pool_index);
    const all = [...used, ...free].sort((a, b) => a - b);
    assert.deepEqual(
      all,
      Array.from({ length: pool.next_index }, (_, index) => index),
      `node ${pool.node_number}: every index below ${pool.next_index} is in use or free, exactly once`,
    );
  }
}

/** A pino logger whose lines a test can read. */
function capturedLogger(): { logger: pino.Logger; messages(): string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  return {
    logger: pino({ level: 'info' }, sink),
    messages: () => lines.map((line) => String((JSON.parse(line) as { msg?: unknown }).msg)),
  };
}

test('two reconcilers started together on one PostgreSQL: only one acts, the other skips its pass', async (t) => {
  const databaseUrl = await freshDatabase(t);
  const first = capturedLogger();
  const second = capturedLogger();
  let profileConfig: Partial<PortalConfigFile> = {};
  const lab = await startPortalWithNode({
    database: databaseUrl,
    logger: first.logger,
    config: (nodeUrl) =>
      (profileConfig = {
        ProfileList: [
          {
            profileId: 'employees',
            displayName: 'Employees',
            hostName: 'vpn.example.org',
            wRangeFour: '10.51.0.0/22',
            wRangeSix: 'fd51::/64',
            nodeUrl,
          },
        ],
      }),
  });
  const other = await startTestPortal({
    dataDir: lab.portal.dataDir,
    database: databaseUrl,
    config: profileConfig,
    logger: second.logger,
  });
  t.after(async () => {
    await other.close();
    await lab.close();
  });

  // The node is down while 300 configurations are made (on both instances); it comes back empty.
  await lab.stopAgent();
  for (let index = 0; index < 300; index++) {
    const response = await (index % 2 === 0 ? lab.portal : other).post('/create', {
      user_id: `user${index}`,
      profile_id: 'employees',
    });
    assert.equal(response.status, 200, response.text);
  }
  await lab.startAgent();
  const before = { first: first.messages().length, second: second.messages().length };

  await Promise.all([lab.portal.portal.reconcileNow(), other.portal.reconcileNow()]);

  const acted = 'reconcile: node 0 had 0 peer(s) too many and missed 300';
  const skipped = 'reconcile pass skipped: another portal instance is running one';
  const newMessages = [first.messages().slice(before.first), second.messages().slice(before.second)];
  const actors = newMessages.filter((messages) => messages.includes(acted));
  const skippers = newMessages.filter((messages) => messages.includes(skipped));
  assert.equal(actors.length, 1, `exactly one instance reconciled the node: ${JSON.stringify(newMessages)}`);
  assert.equal(skippers.length, 1, `the other skipped its pass: ${JSON.stringify(newMessages)}`);
  assert.notEqual(actors[0], skippers[0], 'the one that acted is not the one that skipped');
  assert.equal((await lab.peersOnNode()).size, 300, 'the node has every configuration once');

  // Once the passes queued meanwhile are done (the acting instance saw the node come back and
  // queued one more for it), a pass alone is not skipped and finds nothing to do.
  await lab.portal.portal.reconcileNow();
  await other.portal.reconcileNow();
  const quiet = second.messages().length;
  await other.portal.reconcileNow();
  assert.ok(!second.messages().slice(quiet).includes(skipped), 'a pass alone is not skipped');
  assert.equal((await lab.peersOnNode()).size, 300, 'and changes nothing');
});

test('the reconcile locks: taken by one instance, skipped by another, all of an instance on one connection, released when the holder finishes or its connection dies', async (t) => {
  const databaseUrl = await freshDatabase(t);
  const one = await openDatabase({ dialect: 'postgres', url: databaseUrl });
  const two = connectDatabase({ dialect: 'postgres', url: databaseUrl });
  t.after(async () => {
    await one.destroy();
    await two.destroy();
  });
  const locksOne = new ExclusiveLocks(one);
  const locksTwo = new ExclusiveLocks(two);
  // pg_locks is the whole server's: other tests' portals run on other databases of it.
  const lockHolders = async () =>
    (
      await sql<{ pid: number }>`
        SELECT pid FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`.execute(
        two,
      )
    ).rows.map((row) => row.pid);

  let release = (): void => {};
  const holding = new Promise<void>((resolve) => (release = resolve));
  let started = false;
  const firstPass = locksOne.run('reconcile', async () => {
    started = true;
    await holding;
    return 'first';
  });
  while (!started) await sleep(5);
  assert.deepEqual(await locksTwo.run('reconcile', async () => 'second'), { ran: false });
  assert.deepEqual(await locksTwo.run('something else', async () => 'other work'), {
    ran: true,
    value: 'other work',
  });
  // A node's lock beside the pass's: the same connection holds both.
  const both = await locksOne.run('reconcile-node:0', lockHolders);
  assert.ok(both.ran);
  assert.equal(both.value.length, 2, 'two advisory locks are held');
  assert.equal(new Set(both.value).size, 1, 'on one connection');
  release();
  assert.deepEqual(await firstPass, { ran: true, value: 'first' });
  assert.deepEqual(await lockHolders(), [], 'each lock is released when its work ends');
  assert.deepEqual(await locksTwo.run('reconcile', async () => 'second'), { ran: true, value: 'second' });

  // An instance that dies mid-pass: its connection closes and the server releases the lock.
  let holder = 0;
  let finish = (): void => {};
  const crashed = locksOne.run('reconcile', async () => {
    holder = (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(one)).rows[0]?.pid ?? 0;
    await new Promise<void>((resolve) => (finish = resolve));
    return 'finished after losing its connection';
  });
  while (holder === 0) await sleep(5);
  const [reserved, ...others] = await lockHolders();
  assert.deepEqual(others, [], 'one advisory lock is held');
  assert.notEqual(reserved, holder, 'on the connection reserved for the pass, not on the one the pass queries with');
  await onServer(databaseUrl, (client) => client.query('SELECT pg_terminate_backend($1)', [reserved]));
  assert.deepEqual(await locksTwo.run('reconcile', async () => 'after the crash'), {
    ran: true,
    value: 'after the crash',
  });
  // The same instance's next lock is taken on a fresh connection, while the pass still runs.
  assert.deepEqual(await locksOne.run('reconcile-node:0', async () => 'on a fresh connection'), {
    ran: true,
    value: 'on a fresh connection',
  });
  // The instance whose connection died is not brought down by it: its pass ends normally.
  finish();
  assert.deepEqual(await crashed, { ran: true, value: 'finished after losing its connection' });
  assert.deepEqual(
    await one.selectFrom('users').select('user_id').execute(),
    [],
    'and its next query gets a new connection',
  );
});

test('four instances starting together on an empty PostgreSQL database apply each migration once', async (t) => {
  const databaseUrl = await freshDatabase(t);
  const instances = await Promise.all(
    Array.from({ length: 4 }, () => openDatabase({ dialect: 'postgres', url: databaseUrl })),
  );
  t.after(async () => {
    for (const instance of instances) await instance.destroy();
  });
  const applied = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(
    instances[0] as Db,
  );
  assert.deepEqual(
    applied.rows.map((row) => row.name),
    [...EXPECTED_MIGRATIONS],
    'each migration is recorded once',
  );
  for (const instance of instances) {
    assert.deepEqual(
      await instance.selectFrom('users').select('user_id').execute(),
      [],
      'every instance sees the schema',
    );
  }
});
