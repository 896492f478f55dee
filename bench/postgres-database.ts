// A throw-away database for a benchmark on the PostgreSQL server bench/run.sh started (or the one
// TEST_POSTGRES_URL names), shared by bench/run.ts and bench/search.ts.
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** A fresh database on the PostgreSQL server of TEST_POSTGRES_URL, dropped afterwards. */
export async function createPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const server = process.env['TEST_POSTGRES_URL'];
  if (server === undefined || server === '')
    throw new Error(
      'the PostgreSQL figures need a server: run "npm run bench" (bench/run.sh starts one) or set TEST_POSTGRES_URL',
    );
  const name = `vpn_portal_bench_${randomBytes(6).toString('hex')}`;
  const admin = async (statement: string): Promise<void> => {
    const client = new pg.Client({ connectionString: server });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return { url: url.href, drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}
