// The million-configuration data set (bench/million.ts), written by PostgreSQL itself into a
// fresh database the portal's own migrations made: users, WireGuard configurations over the
// fifty profiles (one node each), and the session history, each row in the shape the portal
// writes (ATOM times, time-ordered log ids, paired pool addresses). No row crosses the client:
// INSERT … SELECT generate_series. The history's secondary indexes are dropped for the load
// and built again after it (what a restore does: much faster than growing them row by row).
import { sql } from 'kysely';
import { connectDatabase, migrateToLatest } from '../../src/storage/database.js';

export const NODES = 50;
const DAY_S = 86_400;
/** The history covers this many days before now: a day more than the default retention (P1M). */
export const HISTORY_DAYS = 33;
/** Each session lasts an hour plus up to half an hour. */
const SESSION_S = 3600;

export interface DataSet {
  readonly configurations: number;
  readonly users: number;
  readonly historyRows: number;
  /** One user in a hundred is disabled. */
  readonly disabledUsers: number;
}

export function dataSetAt(scale: number): DataSet {
  const configurations = Math.round(1_000_000 * scale);
  const users = Math.round(configurations / 2);
  return {
    configurations,
    users,
    historyRows: Math.round(10_000_000 * scale),
    disabledUsers: Math.floor(users / 100),
  };
}

export const profileId = (node: number): string => `p${String(node).padStart(2, '0')}`;
export const userId = (index: number): string => `u${String(index).padStart(7, '0')}@example.org`;
export const rangeFour = (node: number): string => `10.${100 + node}.0.0/16`;
export const rangeSix = (node: number): string => `fd6d:${(node + 1).toString(16)}::/64`;
/** Configuration i: profile i % 50, pool index i / 50, user i / 2 (two configurations each). */
export const tunnelFour = (configuration: number): string => {
  const host = Math.floor(configuration / NODES) + 2;
  return `10.${100 + (configuration % NODES)}.${Math.floor(host / 256)}.${host % 256}`;
};
export const clientAddress = (configuration: number): string => {
  const value = (configuration * 31) % 50_000;
  return `100.64.${Math.floor(value / 256)}.${value % 256}`;
};

const atom = (epochSeconds: string): string =>
  `to_char(to_timestamp(${epochSeconds}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')`;

/** Migrates `url` (a fresh database) and fills it; returns what each step took, in seconds. */
export async function buildDataSet(url: string, set: DataSet, nowS: number): Promise<Record<string, number>> {
  const db = connectDatabase({ dialect: 'postgres', url });
  const took: Record<string, number> = {};
  const step = async (name: string, work: () => Promise<unknown>): Promise<void> => {
    const started = performance.now();
    await work();
    took[name] = Math.round((performance.now() - started) / 100) / 10;
  };
  try {
    await step('migrations', () => migrateToLatest(db));
    const { configurations, users, historyRows } = set;
    // The expression of configuration i's fields, shared by the configurations and the history.
    const profile = (i: string) => `'p' || lpad((${i} % ${NODES})::text, 2, '0')`;
    const user = (i: string) => `'u' || lpad((${i} / 2)::text, 7, '0') || '@example.org'`;
    const host = (i: string) => `(${i} / ${NODES} + 2)`;
    const four = (i: string) =>
      `'10.' || (100 + ${i} % ${NODES}) || '.' || (${host(i)} / 256) || '.' || (${host(i)} % 256)`;
    const six = (i: string) => `'fd6d:' || to_hex(${i} % ${NODES} + 1) || '::' || to_hex(${host(i)})`;
    // A unique, well-formed WireGuard key: the index in the first four bytes.
    const key = (i: string) => `encode(int4send(${i}::int) || '\\x${'00'.repeat(27)}40'::bytea, 'base64')`;
    await db.transaction().execute(async (trx) => {
      await sql`SET LOCAL maintenance_work_mem = '256MB'`.execute(trx);
      await step('users', () =>
        sql
          .raw(
            `INSERT INTO users (user_id, created_at, last_seen, is_disabled)
             SELECT 'u' || lpad(u::text, 7, '0') || '@example.org', ${atom(`${nowS - 400 * DAY_S} + u`)}, ${atom(`${nowS - DAY_S} + u % ${DAY_S}`)},
               CASE WHEN u % 100 = 99 THEN 1 ELSE 0 END
             FROM generate_series(0, ${users - 1}) AS u`,
          )
          .execute(trx),
      );
      await step('configurations', () =>
        sql
          .raw(
            `INSERT INTO wg_peers (public_key, user_id, profile_id, node_number, display_name, ip_four, ip_six, pool_index, created_at, expires_at, auth_key)
             SELECT ${key('i')}, ${user('i')}, ${profile('i')}, i % ${NODES}, 'Laptop', ${four('i')}, ${six('i')}, i / ${NODES},
               ${atom(`${nowS - 365 * DAY_S} + i * ${Math.floor((365 * DAY_S) / configurations)}`)},
               ${atom(`${nowS + 30 * DAY_S} + (i % 150) * ${DAY_S} + i % ${DAY_S}`)}, NULL
             FROM generate_series(0, ${configurations - 1}) AS i`,
          )
          .execute(trx),
      );
      await step('address pools', () =>
        sql
          .raw(
            `INSERT INTO ip_pools (profile_id, node_number, range_four, range_six, next_index)
             SELECT 'p' || lpad(n::text, 2, '0'), n, '10.' || (100 + n) || '.0.0/16', 'fd6d:' || to_hex(n + 1) || '::/64',
               (SELECT count(*) FROM wg_peers WHERE node_number = n)
             FROM generate_series(0, ${NODES - 1}) AS n`,
          )
          .execute(trx),
      );
      const indexes = await sql<{ indexname: string; indexdef: string }>`
        SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'connection_log'
          AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = 'connection_log'::regclass)`.execute(
        trx,
      );
      for (const index of indexes.rows) await sql.raw(`DROP INDEX ${index.indexname}`).execute(trx);
      // Session j: a configuration spread over all of them, started every few tenths of a second
      // over HISTORY_DAYS, all closed; the client's own address is kept for the last 7 days only
      // (originatingIpRetention's default: the daily housekeeping blanked older ones).
      const first = nowS - HISTORY_DAYS * DAY_S;
      const startMs = `(${first}::bigint * 1000 + j * ${Math.floor(((HISTORY_DAYS - 1) * DAY_S * 1000) / historyRows)})`;
      const endS = `(${startMs} / 1000 + ${SESSION_S} + j % 1800)`;
      const config = `((j * 7919) % ${configurations})`;
      const hex = `lpad(to_hex(${startMs}), 12, '0') || '7' || lpad(to_hex(j % 4096), 3, '0') || '8' || lpad(to_hex(j), 15, '0')`;
      await step('history', () =>
        sql
          .raw(
            `INSERT INTO connection_log (log_id, user_id, profile_id, vpn_proto, connection_id, node_number, ip_four, ip_six, originating_ip, connected_at, disconnected_at, bytes_in, bytes_out)
             SELECT substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4) || '-' || substr(h, 17, 4) || '-' || substr(h, 21),
               ${user('c')}, ${profile('c')}, 'wireguard', ${key('c')}, c % ${NODES}, ${four('c')}, ${six('c')},
               CASE WHEN e >= ${nowS - 7 * DAY_S} THEN '100.64.' || (((c * 31) % 50000) / 256) || '.' || (((c * 31) % 50000) % 256) END,
               ${atom(`${startMs} / 1000`)}, ${atom('e')}, 1000000 + j % 1000, 5000000 + j % 1000
             FROM generate_series(0::bigint, ${historyRows - 1}) AS j,
               LATERAL (SELECT ${config} AS c, ${hex} AS h, ${endS} AS e) AS derived`,
          )
          .execute(trx),
      );
      await step('history indexes', async () => {
        for (const index of indexes.rows) await sql.raw(index.indexdef).execute(trx);
      });
    });
    // Housekeeping ran today already: the first pass does not run it (the bench runs it on purpose).
    await sql`INSERT INTO portal_state (key, value) VALUES ('housekeeping.day', ${new Date(nowS * 1000).toISOString().slice(0, 10)})
      ON CONFLICT (key) DO UPDATE SET value = excluded.value`.execute(db);
    await step('analyze', () => sql`VACUUM ANALYZE`.execute(db));
    return took;
  } finally {
    await db.destroy();
  }
}
