// What a create's writes cost SQLite itself, measured in the same run as the creates: the
// statements the portal runs for a create of a new user (as its log of prepared statements
// shows them), on the real schema (the portal's migrations), with better-sqlite3 alone: no
// query builder, no HTTP, no event loop. Once with a commit per create, once with eight creates
// per commit (what the portal's group commit does under load). The SQL is written out here on
// purpose: it measures SQLite, not the code that builds it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { openDatabase } from '../src/storage/database.js';
import { round } from './process-figures.js';

export interface CreateWrites {
  /** Microseconds of a create's statements with a commit of its own. */
  readonly perCreateUs: number;
  /** …of which the commit. */
  readonly commitUs: number;
  /** Microseconds per create with eight creates per commit. */
  readonly groupedUs: number;
}

const CREATES = 10_000;
const POOL = ['bench', 0, '10.64.0.0/14', 'fd64::/64'] as const;
const NOW = '2026-11-25T10:00:00+00:00';

export async function measureCreateWrites(): Promise<CreateWrites> {
  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-writes-'));
  try {
    const file = path.join(directory, 'db.sqlite');
    await (await openDatabase({ dialect: 'sqlite', path: file })).destroy();
    const alone = run(file, 'alone', 1);
    const grouped = run(file, 'grouped', 8);
    return { perCreateUs: round(alone.totalUs), commitUs: round(alone.commitUs), groupedUs: round(grouped.totalUs) };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

function run(file: string, prefix: string, perCommit: number): { totalUs: number; commitUs: number } {
  const db = new SqliteDatabase(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('temp_store = MEMORY');
  db.pragma('foreign_keys = ON');
  const statement = (text: string) => db.prepare(text);
  const begin = statement('BEGIN IMMEDIATE');
  const commit = statement('COMMIT');
  const savepoint = statement('SAVEPOINT grouped_transaction');
  const release = statement('RELEASE grouped_transaction');
  const selectUser = statement('SELECT user_id, is_disabled FROM users WHERE user_id = ?');
  const insertUser = statement(
    'INSERT INTO users (user_id, created_at, last_seen, auth_data) VALUES (?, ?, ?, ?) ON CONFLICT (user_id) DO NOTHING RETURNING user_id',
  );
  const webhooks = statement('SELECT webhook_id, event_types FROM webhooks ORDER BY webhook_id');
  const givenBack =
    statement(`DELETE FROM ip_pool_free WHERE profile_id = ? AND node_number = ? AND range_four = ? AND range_six = ?
    AND pool_index = (SELECT pool_index FROM ip_pool_free WHERE profile_id = ? AND node_number = ? AND range_four = ? AND range_six = ?
    ORDER BY pool_index LIMIT 1) RETURNING pool_index`);
  const insertPool = statement(
    'INSERT INTO ip_pools (profile_id, node_number, range_four, range_six, next_index) VALUES (?, ?, ?, ?, 0) ON CONFLICT DO NOTHING',
  );
  const advance = statement(`UPDATE ip_pools SET next_index = next_index + 1
    WHERE profile_id = ? AND node_number = ? AND range_four = ? AND range_six = ? AND next_index < ? RETURNING next_index`);
  const revision = statement('UPDATE change_revision SET value = value + 1 WHERE id = 1 RETURNING value');
  const insertPeer =
    statement(`INSERT INTO wg_peers (public_key, user_id, profile_id, node_number, display_name, ip_four, ip_six,
    pool_index, created_at, expires_at, auth_key, expiry_warned, revision) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (ip_four) DO NOTHING RETURNING *`);
  const audit =
    statement(`INSERT INTO audit_log (audit_id, at, key_name, source_address, call, parameters, status, user_id,
    connection_ids, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const listing = statement(
    'INSERT INTO listing_generation (shard, generation) VALUES (?, 1) ON CONFLICT (shard) DO UPDATE SET generation = listing_generation.generation + 1',
  );
  insertPool.run(...POOL);
  let commitNs = 0n;
  const started = process.hrtime.bigint();
  for (let index = 0; index < CREATES; index++) {
    const user = `${prefix}${index}`;
    if (index % perCommit === 0) begin.run();
    if (perCommit > 1) savepoint.run();
    selectUser.get(user);
    insertUser.get(user, NOW, NOW, null);
    webhooks.all();
    givenBack.all(...POOL, ...POOL);
    const { next_index: next } = advance.get(...POOL, 262_141) as { next_index: number };
    const poolIndex = next - 1;
    const { value } = revision.get() as { value: number };
    const key = `${prefix}${String(index).padStart(43 - prefix.length, '0')}=`;
    insertPeer.get(
      key,
      user,
      'bench',
      0,
      'Admin API',
      `10.64.${poolIndex >> 8}.${poolIndex & 255}`,
      `fd64::${poolIndex.toString(16)}`,
      poolIndex,
      NOW,
      '2027-01-01T00:00:00+00:00',
      null,
      0,
      value,
    );
    audit.run(
      `${prefix}${String(index).padStart(20, '0')}`,
      NOW,
      'admin',
      '127.0.0.1',
      'create',
      '{"user_id":"x","profile_id":"bench"}',
      200,
      user,
      `["${key}"]`,
      null,
    );
    listing.run(index % 16);
    if (perCommit > 1) release.run();
    if (index % perCommit === perCommit - 1) {
      const committing = process.hrtime.bigint();
      commit.run();
      commitNs += process.hrtime.bigint() - committing;
    }
  }
  const totalUs = Number(process.hrtime.bigint() - started) / 1000 / CREATES;
  db.close();
  return { totalUs, commitUs: Number(commitNs) / 1000 / CREATES };
}
