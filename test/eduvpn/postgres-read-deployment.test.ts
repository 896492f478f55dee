// The eduVPN reader on a PostgreSQL database whose tables without a key hold holes (rows eduVPN
// deleted, space a VACUUM gave back and new rows took): the connection log and the daily
// statistics come in ranges of blocks, every row once and in the order of its place, each query
// a TID range scan of a few blocks, so the table is read about once in all rather than once per
// page; rows written past the table's end while it is read are read too.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { EduVpnConnectionLogEntry, EduVpnDeployment } from '../../src/eduvpn/deployment.js';
import { readEduVpnDeployment } from '../../src/eduvpn/read-deployment.js';
import { runOnEduVpnDatabase } from '../support/eduvpn-database.js';
import {
  type EduVpnDeploymentSpec,
  eduVpnDatabaseOfPass,
  type WrittenEduVpnDeployment,
  writeEduVpnDeployment,
} from '../support/eduvpn-deployment.js';
import { type SentStatement, statementsWithValuesSentBy } from '../support/pg-statements.js';
import { queryPlan } from '../support/query-plans.js';

type TestContext = { after: (fn: () => Promise<void> | void) => void };

const PROFILES: EduVpnDeploymentSpec['profiles'] = [
  {
    profileId: 'office',
    nodes: [
      {
        nodeNumber: 0,
        hostName: 'vpn0.example.org',
        wRangeFour: '10.63.0.0/24',
        wRangeSix: 'fd63::/64',
      },
    ],
  },
];

const USERS: EduVpnDeploymentSpec['users'] = [
  { userId: 'alice', configurations: [{ protocol: 'wireguard', profileId: 'office' }] },
];

/** Rows per page the reader is asked for: small, so the table spans many pages. */
const PAGE_SIZE = 200;

async function written(t: TestContext): Promise<WrittenEduVpnDeployment> {
  const dir = await mkdtemp(path.join(tmpdir(), 'eduvpn-reader-postgres-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const { postgresUrl } = await eduVpnDatabaseOfPass(t);
  assert.ok(postgresUrl !== undefined, 'a PostgreSQL pass');
  return writeEduVpnDeployment(dir, { profiles: PROFILES, users: USERS, postgresUrl, statisticsDays: 1000 });
}

/**
 * Appends `count` connection log entries of batch `batch` (their bytes_out), numbered 1 and on
 * (their bytes_in), every third of a user eduVPN deleted.
 */
function moreHistory(database: string, batch: number, count: number): Promise<void> {
  return runOnEduVpnDatabase(
    database,
    `INSERT INTO connection_log
       (user_id, profile_id, vpn_proto, connection_id, ip_four, ip_six, connected_at, bytes_in, bytes_out, disconnected_at)
     SELECT CASE WHEN n % 3 = 0 THEN 'gone' ELSE 'alice' END, 'office', 'wireguard',
            encode(sha256(convert_to('${batch}-' || n, 'UTF8')), 'base64'), '10.63.0.2', 'fd63::2',
            '2026-01-01T00:00:00+00:00', n, ${batch}, '2026-01-01T01:00:00+00:00'
       FROM generate_series(1, ${count}) AS n`,
  );
}

/**
 * A connection log of about 12,000 entries with holes: a stretch of 3,000 deleted (whole blocks
 * left empty), every seventh deleted, a VACUUM that gives the space back, then 900 entries more
 * that take some of it (so the order of places is not the order of writing).
 */
async function historyWithHoles(database: string): Promise<void> {
  await moreHistory(database, 1, 12_000);
  await runOnEduVpnDatabase(
    database,
    'DELETE FROM connection_log WHERE bytes_out = 1 AND (bytes_in BETWEEN 3001 AND 6000 OR bytes_in % 7 = 0)',
  );
  await runOnEduVpnDatabase(database, 'VACUUM connection_log');
  await moreHistory(database, 2, 900);
}

/** The connection ids of the connection log in the order of their places. */
async function idsInPlaceOrder(database: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: database });
  await client.connect();
  try {
    const result = await client.query<{ connection_id: string }>(
      'SELECT connection_id FROM connection_log ORDER BY ctid',
    );
    return result.rows.map((row) => row.connection_id);
  } finally {
    await client.end();
  }
}

async function opened(t: TestContext, deployment: WrittenEduVpnDeployment): Promise<EduVpnDeployment> {
  const reader = await readEduVpnDeployment(deployment.location, { pageSize: PAGE_SIZE });
  t.after(() => reader.close());
  return reader;
}

async function pages<T>(iterable: AsyncIterable<readonly T[]>): Promise<T[][]> {
  const all: T[][] = [];
  for await (const page of iterable) all.push([...page]);
  return all;
}

/** The statements the reader sent that read `table`'s rows. */
function readsOf(sent: readonly SentStatement[], table: string): SentStatement[] {
  return sent.filter((statement) => statement.text.includes(`from "${table}"`));
}

interface PlanNode {
  readonly 'Relation Name'?: string;
  readonly 'Shared Hit Blocks': number;
  readonly 'Shared Read Blocks': number;
  readonly Plans?: readonly PlanNode[];
}

/** The blocks of `table` a statement touched when run again, as the server counts them (EXPLAIN ANALYZE). */
async function blocksTouched(client: pg.Client, statement: SentStatement, table: string): Promise<number> {
  const result = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statement.text}`,
    [...statement.values],
  );
  const [explained] = result.rows[0]?.['QUERY PLAN'] ?? [];
  assert.ok(explained !== undefined);
  const sum = (node: PlanNode): number =>
    (node['Relation Name'] === table ? node['Shared Hit Blocks'] + node['Shared Read Blocks'] : 0) +
    (node.Plans ?? []).reduce((total, child) => total + sum(child), 0);
  return sum(explained.Plan);
}

test('a connection log with holes comes from PostgreSQL whole, in the order of its places, reading each block about once', async (t) => {
  const deployment = await written(t);
  const database = deployment.location.database;
  await historyWithHoles(database);
  const expected = await idsInPlaceOrder(database);
  const reader = await opened(t, deployment);

  const { sent, result: logPages } = await statementsWithValuesSentBy(() => pages(reader.connectionLog()));
  const ids = logPages.flat().map((entry) => entry.connectionId);
  assert.equal(ids.length, expected.length);
  assert.deepEqual(ids, expected, 'every entry once, in the order of its place');
  assert.ok(
    logPages.slice(0, -1).every((page) => page.length === PAGE_SIZE),
    'pages of the asked size, the last one fewer',
  );
  const owners = new Set(logPages.flat().map((entry) => `${entry.bytesOut} ${entry.userId}`));
  assert.deepEqual([...owners].sort(), ['1 alice', '1 gone', '2 alice', '2 gone', '654321 alice']);

  const client = new pg.Client({ connectionString: database });
  await client.connect();
  try {
    const size = await client.query<{ blocks: string }>(
      "SELECT pg_relation_size('connection_log') / current_setting('block_size')::int AS blocks",
    );
    const tableBlocks = Number(size.rows[0]?.blocks);
    assert.ok(tableBlocks > 200, `a table of ${tableBlocks} blocks spans many pages`);
    let touched = 0;
    for (const statement of readsOf(sent, 'connection_log'))
      touched += await blocksTouched(client, statement, 'connection_log');
    // Pages after the last row seen up to the table's end would touch about pages × blocks / 2
    // (here some thousands).
    assert.ok(touched <= 1.5 * tableBlocks, `${touched} blocks touched for a table of ${tableBlocks}`);
  } finally {
    await client.end();
  }
});

test('each query of the connection log and of the daily statistics is a TID range scan between two places', async (t) => {
  const deployment = await written(t);
  const database = deployment.location.database;
  await historyWithHoles(database);
  const reader = await opened(t, deployment);
  const { sent } = await statementsWithValuesSentBy(async () => {
    await pages(reader.connectionLog());
    await pages(reader.dailyStatistics());
  });

  const db = new Kysely<Record<string, never>>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database, max: 1 }) }),
  });
  try {
    for (const table of ['connection_log', 'aggregate_stats']) {
      const reads = readsOf(sent, table);
      assert.ok(reads.length > 2, `${table}: read in ${reads.length} queries`);
      for (const statement of reads) {
        const plan = await queryPlan(db, CompiledQuery.raw(statement.text, [...statement.values]));
        assert.match(plan, new RegExp(`Tid Range Scan on ${table}`), plan);
        assert.match(plan, /TID Cond: \(\(ctid > .+\) AND \(ctid < .+\)\)/, plan);
        assert.doesNotMatch(plan, /Seq Scan/, plan);
      }
    }
  } finally {
    await db.destroy();
  }
});

test('rows written past the end of the connection log while it is read are read too', async (t) => {
  const deployment = await written(t);
  const database = deployment.location.database;
  await moreHistory(database, 1, 2000);
  const reader = await opened(t, deployment);

  const read: EduVpnConnectionLogEntry[] = [];
  for await (const page of reader.connectionLog()) {
    if (read.length === 0) await moreHistory(database, 2, 500);
    read.push(...page);
  }
  assert.deepEqual(
    read.map((entry) => entry.connectionId),
    await idsInPlaceOrder(database),
  );
  assert.equal(read.filter((entry) => entry.bytesOut === 2).length, 500);
});
