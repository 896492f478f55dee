// A portal database reached over PostgreSQL's Unix socket, as Debian sets a server up
// (`postgres://vpn@/vpn?host=/var/run/postgresql`): the throw-away server of test/run.sh also
// listens on a socket in its folder (TEST_POSTGRES_SOCKET_DIR), where local connections are trusted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sql } from 'kysely';
import { resolvePortalConfig } from '../../src/config/load.js';
import { migrationStatus, openDatabase } from '../../src/storage/database.js';
import { createTestDatabase, dropTestDatabase, postgresServerUrl } from '../support/postgres.js';

const PROFILE = {
  profileId: 'employees',
  displayName: 'Employees',
  hostName: 'vpn.example.org',
  wRangeFour: '10.44.0.0/24',
  wRangeSix: 'fd44::/64',
};

test('a Unix-socket URL in the configuration really connects over the socket, and the portal schema is applied', async (t) => {
  const socketDir = process.env['TEST_POSTGRES_SOCKET_DIR'];
  assert.ok(socketDir, 'TEST_POSTGRES_SOCKET_DIR names the folder of the server socket (test/run.sh sets it)');
  const server = postgresServerUrl();
  const { name } = await createTestDatabase(server);
  t.after(() => dropTestDatabase(server, name));
  const { port } = new URL(server);
  const url = `postgres://postgres@/${name}?host=${socketDir}&port=${port}`;
  const config = resolvePortalConfig({ dataDir: '/nonexistent', database: url, ProfileList: [PROFILE] }, 'portal.json');
  const db = await openDatabase(config.database);
  try {
    const migrations = await migrationStatus(db);
    assert.ok(
      migrations.length > 0 && migrations.every((migration) => migration.appliedAt !== null),
      'every migration applied',
    );
    // A client on a Unix socket has no address.
    const { rows } = await sql<{
      client_addr: string | null;
    }>`SELECT client_addr FROM pg_stat_activity WHERE pid = pg_backend_pid()`.execute(db);
    assert.deepEqual(rows, [{ client_addr: null }]);
  } finally {
    await db.destroy();
  }
});
