// The `database` option's PostgreSQL URLs, also over a Unix socket (Debian's default:
// `postgres://vpn@/vpn?host=/var/run/postgresql`): accepted, shown with the password masked,
// and read by pg as a socket folder. test/storage/postgres-unix-socket.test.ts connects for real.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'pg-connection-string';
import { resolvePortalConfig } from '../../src/config/load.js';
import { describeDatabase, parseDatabaseLocation } from '../../src/config/database-location.js';

const PROFILE = {
  profileId: 'employees',
  displayName: 'Employees',
  hostName: 'vpn.example.org',
  wRangeFour: '10.44.0.0/24',
  wRangeSix: 'fd44::/64',
};

test('a Unix-socket PostgreSQL URL is accepted by the configuration, and pg reads its socket folder', () => {
  const url = 'postgres://vpn@/vpn?host=/var/run/postgresql';
  const config = resolvePortalConfig(
    { dataDir: '/var/lib/vpn-portal', database: url, ProfileList: [PROFILE] },
    'portal.json',
  );
  assert.deepEqual(config.database, { dialect: 'postgres', url });
  assert.equal(describeDatabase(config.database), url);
  const options = parse(url);
  assert.equal(options.host, '/var/run/postgresql');
  assert.equal(options.user, 'vpn');
  assert.equal(options.database, 'vpn');
});

test('socket URLs without a user or with a password parse too; the password is masked', () => {
  assert.equal(
    describeDatabase(parseDatabaseLocation('postgres:///vpn?host=/run/postgresql', '/')),
    'postgres:///vpn?host=/run/postgresql',
  );
  assert.equal(
    describeDatabase(parseDatabaseLocation('postgresql://vpn:s3cret@/vpn?host=/run/postgresql&port=5433', '/')),
    'postgresql://vpn:***@/vpn?host=/run/postgresql&port=5433',
  );
  assert.equal(
    describeDatabase(parseDatabaseLocation('postgres://vpn:s3cret@db.example.org:5432/vpn', '/')),
    'postgres://vpn:***@db.example.org:5432/vpn',
  );
});

test('a URL with neither a host nor a socket folder, or without a database, is refused', () => {
  assert.throws(
    () => parseDatabaseLocation('postgres://vpn@/vpn', '/'),
    /names no host \(nor a socket folder in \?host=\)/,
  );
  assert.throws(() => parseDatabaseLocation('postgres://vpn@/?host=/run/postgresql', '/'), /names no database/);
});
