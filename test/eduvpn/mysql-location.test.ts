// The URL that names an eduVPN database kept in MariaDB/MySQL: what it may hold, how it reads
// back, and that neither its description nor an error repeats the password.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  describeMysqlLocation,
  formatMysqlUrl,
  isMysqlUrl,
  MysqlLocationError,
  parseMysqlUrl,
} from '../../src/eduvpn/mysql-location.js';

test('a mysql:// or mariadb:// URL gives the account, the server or socket, the database and the character set', () => {
  assert.deepEqual(parseMysqlUrl('mysql://vpn:p%40ss%3Aw%2Frd@db.example.org:3307/eduvpn'), {
    dialect: 'mysql',
    user: 'vpn',
    password: 'p@ss:w/rd',
    host: 'db.example.org',
    port: 3307,
    socketPath: undefined,
    database: 'eduvpn',
    charset: undefined,
  });
  assert.deepEqual(parseMysqlUrl('mariadb://root@localhost/vpn?socket=/run/mysqld/mysqld.sock&charset=utf8mb4'), {
    dialect: 'mysql',
    user: 'root',
    password: '',
    host: 'localhost',
    port: undefined,
    socketPath: '/run/mysqld/mysqld.sock',
    database: 'vpn',
    charset: 'utf8mb4',
  });
  assert.equal(parseMysqlUrl('mysql://u:p@[2001:db8::7]:3306/vpn').host, '2001:db8::7');
  assert.ok(isMysqlUrl('mysql://u@h/d') && isMysqlUrl('mariadb://u@h/d'));
  assert.ok(!isMysqlUrl('postgres://u@h/d') && !isMysqlUrl('sqlite:/tmp/mysql://x'));
});

test('a location is written as a URL that reads back the same, and described with its password masked', () => {
  const location = parseMysqlUrl('mysql://v%20pn:a%2Bb%26c%3F@[2001:db8::7]:3306/edu%2Dvpn?socket=/srv/my.sock');
  assert.deepEqual(parseMysqlUrl(formatMysqlUrl(location)), location);
  assert.equal(location.password, 'a+b&c?');
  assert.equal(describeMysqlLocation(location), 'mysql://v%20pn:***@[2001:db8::7]:3306/edu-vpn?socket=/srv/my.sock');
  assert.equal(describeMysqlLocation(parseMysqlUrl('mysql://vpn@db/eduvpn')), 'mysql://vpn@db/eduvpn');
});

test('a URL without a host or a database, with an unknown parameter or a relative socket is refused without repeating it', () => {
  const refusals: [string, RegExp][] = [
    ['mysql:///eduvpn', /^names no host/],
    ['mysql://vpn:hunter2@/eduvpn', /^is not a valid MariaDB\/MySQL URL/],
    ['mysql://vpn:hunter2@db', /^names no database/],
    ['mysql://vpn:hunter2@db/a/b', /^names no database/],
    [
      'mysql://vpn:hunter2@db/eduvpn?ssl=true',
      /^has parameter "ssl"; a MariaDB\/MySQL URL may have only socket, charset$/,
    ],
    ['mysql://vpn:hunter2@db/eduvpn?socket=run/mysqld.sock', /^names a socket that is not an absolute path$/],
    ['mysql://vpn:hunter2@db:99999/eduvpn', /^is not a valid MariaDB\/MySQL URL/],
  ];
  for (const [url, message] of refusals)
    assert.throws(
      () => parseMysqlUrl(url),
      (error: unknown) =>
        error instanceof MysqlLocationError && message.test(error.message) && !error.message.includes('hunter2'),
      url,
    );
});
