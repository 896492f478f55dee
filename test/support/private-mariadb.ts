// A MariaDB server of one test file's own, for the eduVPN import's MariaDB/MySQL source: a fresh
// data folder under /tmp made by mariadb-install-db, the server (Debian's mariadb-server)
// listening on 127.0.0.1 at a free port and on a socket in that folder, with Debian's default
// character set (utf8mb4, compared without regard to case). Each test takes a database of its
// own with an account of its own (password, over TCP, as an eduVPN server's `Db` names one).
// stop() kills the server and deletes the folder; so does the test process's exit.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import mysql from 'mysql2/promise';
import { freePort } from './free-port.js';
import { until } from './until.js';

export interface PrivateMariadb {
  /** A new empty database and an account that may do everything in it: `mysql://USER:PASSWORD@127.0.0.1:PORT/NAME`. */
  createDatabase(): Promise<{ readonly name: string; readonly url: string }>;
  /** Kills the server and deletes its folder; again: nothing. */
  stop(): Promise<void>;
}

const running = new Set<{ readonly server: ChildProcess; readonly dir: string }>();
let exitHookAdded = false;

/** Starts a server; `t.after` (or the caller) must stop() it. */
export async function startPrivateMariadb(): Promise<PrivateMariadb> {
  const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-private-mariadb-'));
  const data = path.join(dir, 'data');
  const socket = path.join(dir, 'mariadb.sock');
  const asRoot = process.getuid?.() === 0 ? ['--user=root'] : [];
  const log = path.join(dir, 'server.log');
  let entry: { readonly server: ChildProcess; readonly dir: string } | undefined;
  const stop = async (): Promise<void> => {
    if (entry === undefined) {
      rmSync(dir, { recursive: true, force: true });
      return;
    }
    const { server } = entry;
    running.delete(entry);
    entry = undefined;
    if (server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await promisify(execFile)('mariadb-install-db', [
      '--no-defaults',
      `--datadir=${data}`,
      '--auth-root-authentication-method=normal',
      '--skip-test-db',
      ...asRoot,
    ]);
    const port = await freePort();
    const server = spawn(
      mariadbd(),
      [
        '--no-defaults',
        `--datadir=${data}`,
        `--socket=${socket}`,
        `--port=${port}`,
        '--bind-address=127.0.0.1',
        `--pid-file=${path.join(dir, 'mariadb.pid')}`,
        `--log-error=${log}`,
        '--skip-name-resolve',
        '--character-set-server=utf8mb4',
        '--collation-server=utf8mb4_general_ci',
        '--innodb-flush-log-at-trx-commit=0',
        '--innodb-buffer-pool-size=32M',
        ...asRoot,
      ],
      { stdio: 'ignore' },
    );
    entry = { server, dir };
    running.add(entry);
    addExitHook();
    await until(
      'the private MariaDB server answering',
      async () => server.exitCode !== null || (await answers(socket)),
      120_000,
    );
    if (server.exitCode !== null) throw new Error(`mariadbd exited with code ${server.exitCode}`);
    return { createDatabase: () => createDatabase(socket, port), stop };
  } catch (error) {
    const detail = existsSync(log) ? readFileSync(log, 'utf8') : '';
    await stop();
    throw new Error(`cannot start a private MariaDB server: ${(error as Error).message}\n${detail}`);
  }
}

/** mariadbd: on PATH, else where Debian puts it. */
function mariadbd(): string {
  for (const folder of (process.env['PATH'] ?? '').split(':'))
    if (folder !== '' && existsSync(path.join(folder, 'mariadbd'))) return path.join(folder, 'mariadbd');
  if (existsSync('/usr/sbin/mariadbd')) return '/usr/sbin/mariadbd';
  throw new Error("mariadbd not found: install Debian's mariadb-server package (.ci/run does)");
}

async function answers(socket: string): Promise<boolean> {
  try {
    const connection = await mysql.createConnection({ socketPath: socket, user: 'root' });
    await connection.end();
    return true;
  } catch {
    return false;
  }
}

async function createDatabase(socket: string, port: number): Promise<{ readonly name: string; readonly url: string }> {
  const suffix = randomBytes(6).toString('hex');
  const name = `eduvpn_${suffix}`;
  const user = `vpn_${suffix}`;
  // A password with characters a URL must percent-encode, as real ones have.
  const password = `${randomBytes(12).toString('base64url')}:/@%`;
  const connection = await mysql.createConnection({ socketPath: socket, user: 'root' });
  try {
    await connection.query(`CREATE DATABASE ${name}`);
    await connection.query('CREATE USER ?@? IDENTIFIED BY ?', [user, '127.0.0.1', password]);
    await connection.query(`GRANT ALL PRIVILEGES ON ${name}.* TO ?@?`, [user, '127.0.0.1']);
  } finally {
    await connection.end();
  }
  return { name, url: `mysql://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${name}` };
}

function addExitHook(): void {
  if (exitHookAdded) return;
  exitHookAdded = true;
  process.on('exit', () => {
    for (const { server, dir } of running) {
      server.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
