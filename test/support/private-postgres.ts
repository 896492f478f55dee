// A PostgreSQL server of one test's own, for what must not happen to the server other tests
// share (test/run.sh's throw-away one): stopping all of its processes with SIGSTOP, shutting it
// down or restarting it under a running portal. Started as
// test/support/throwaway-postgres.sh does — initdb into a fresh folder under /tmp, as the
// `postgres` user when run as root, on 127.0.0.1 at a free port, password authentication, no
// fsync — and stopped and deleted by stop(), or when the test process exits.
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestContext } from 'node:test';
import { freePort } from './free-port.js';
import { createTestDatabase } from './postgres.js';
import { undoStepsFor, type AtEnd } from './undo-steps.js';

export interface PrivatePostgres {
  /** postgres://postgres:PASSWORD@127.0.0.1:PORT/postgres */
  readonly url: string;
  /** SIGSTOP to the postmaster and every process it started: the server is there but answers nothing. */
  freeze(): void;
  /** SIGCONT to every process freeze() stopped. */
  thaw(): void;
  /**
   * `pg_ctl restart -m fast`, as an operator restarts the server: every session is ended
   * (57P01), the server is down for a moment, then it takes connections again on the same port.
   * Asynchronous, so a portal in the test's own process keeps running meanwhile.
   */
  restart(): Promise<void>;
  /** `pg_ctl stop -m fast`: the server ends every session and is gone until startUp(). */
  shutDown(): Promise<void>;
  /** Starts the server again after shutDown(), on the same port and data. */
  startUp(): Promise<void>;
  /** Thaws, stops the server and deletes its folder; again: nothing. */
  stop(): void;
}

/** What privateDatabaseFor gives a test. */
export interface PrivateDatabase {
  readonly server: PrivatePostgres;
  /** An empty test database on the server. */
  readonly url: string;
  /** Adds an undo step (undoStepsFor): the server's stop runs last of all. */
  readonly atEnd: AtEnd;
}

/** A server of the test's own with one test database on it, undone when the test ends. */
export async function privateDatabaseFor(t: TestContext): Promise<PrivateDatabase> {
  const atEnd = undoStepsFor(t);
  const server = await startPrivatePostgres();
  atEnd(() => server.stop());
  const { url } = await createTestDatabase(server.url);
  return { server, url, atEnd };
}

const running = new Set<PrivatePostgres>();
let exitHookAdded = false;

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = postgresBin();
  const asRoot = process.getuid?.() === 0;
  if (asRoot) ensurePostgresUser();
  const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-private-postgres-'));
  const run = (program: string, args: readonly string[]) =>
    execFileSync(
      asRoot ? 'runuser' : path.join(bin, program),
      asRoot ? ['-u', 'postgres', '--', path.join(bin, program), ...args] : args,
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
  const password = randomBytes(18).toString('base64url');
  const passwordFile = path.join(dir, 'password');
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  if (asRoot) {
    const { uid, gid } = postgresIds();
    chownSync(dir, uid, gid);
    chownSync(passwordFile, uid, gid);
  }
  const data = path.join(dir, 'data');
  const runAsync = async (program: string, args: readonly string[]): Promise<void> => {
    await promisify(execFile)(
      asRoot ? 'runuser' : path.join(bin, program),
      asRoot ? ['-u', 'postgres', '--', path.join(bin, program), ...args] : [...args],
    );
  };
  let startArgs: string[] = [];
  let url = '';
  let stopped = false;
  let frozen: number[] = [];
  const server: PrivatePostgres = {
    get url() {
      return url;
    },
    freeze() {
      // The postmaster first, so it starts no process after the list of its children is taken.
      const postmaster = postmasterPid(data);
      process.kill(postmaster, 'SIGSTOP');
      frozen = [postmaster];
      for (const child of childrenOf(postmaster)) {
        process.kill(child, 'SIGSTOP');
        frozen.push(child);
      }
    },
    thaw() {
      for (const pid of frozen.reverse()) {
        try {
          process.kill(pid, 'SIGCONT');
        } catch {
          // Gone already.
        }
      }
      frozen = [];
    },
    restart: () =>
      runAsync('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']).then(() => runAsync('pg_ctl', startArgs)),
    shutDown: () => runAsync('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']),
    startUp: () => runAsync('pg_ctl', startArgs),
    stop() {
      if (stopped) return;
      stopped = true;
      running.delete(server);
      server.thaw();
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        // Never started, or already stopped.
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  running.add(server);
  if (!exitHookAdded) {
    exitHookAdded = true;
    process.on('exit', () => {
      for (const each of [...running]) each.stop();
    });
  }
  try {
    run('initdb', [
      '-D',
      data,
      '-U',
      'postgres',
      `--pwfile=${passwordFile}`,
      '--auth-host=scram-sha-256',
      '--auth-local=trust',
      '--encoding=UTF8',
      '--locale=C.UTF-8',
      '--no-sync',
    ]);
    const port = await freePort();
    startArgs = [
      '-D',
      data,
      '-l',
      path.join(dir, 'server.log'),
      '-w',
      '-t',
      '30',
      '-o',
      `-c listen_addresses=127.0.0.1 -c port=${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off`,
      'start',
    ];
    run('pg_ctl', startArgs);
    url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
    return server;
  } catch (error) {
    const log = path.join(dir, 'server.log');
    const detail = existsSync(log) ? readFileSync(log, 'utf8') : '';
    server.stop();
    throw new Error(`cannot start a private PostgreSQL server: ${(error as Error).message}\n${detail}`);
  }
}

/** The folder of initdb and pg_ctl: on PATH, else the newest /usr/lib/postgresql/N/bin (Debian's postgresql package). */
function postgresBin(): string {
  try {
    return path.dirname(execFileSync('sh', ['-c', 'readlink -f "$(command -v pg_ctl)"'], { encoding: 'utf8' }).trim());
  } catch {
    // not on PATH
  }
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base)
    ? readdirSync(base)
        .filter((name) => /^\d+$/.test(name))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const version of versions) {
    const bin = path.join(base, version, 'bin');
    if (existsSync(path.join(bin, 'pg_ctl')) && existsSync(path.join(bin, 'initdb'))) return bin;
  }
  throw new Error(
    "PostgreSQL server binaries (initdb, pg_ctl) not found: install Debian's postgresql package (.ci/run does)",
  );
}

/** PostgreSQL refuses to run as root: the server runs as `postgres`, made when missing. */
function ensurePostgresUser(): void {
  try {
    execFileSync('id', ['postgres'], { stdio: 'ignore' });
  } catch {
    execFileSync('useradd', [
      '--system',
      '--no-create-home',
      '--home-dir',
      '/nonexistent',
      '--shell',
      '/usr/sbin/nologin',
      'postgres',
    ]);
  }
}

function postgresIds(): { readonly uid: number; readonly gid: number } {
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

/** The first line of postmaster.pid. */
function postmasterPid(data: string): number {
  const pid = Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no postmaster pid in ${data}/postmaster.pid`);
  return pid;
}

/** Processes whose parent is `pid` (/proc/N/stat: the parent is the field after the state). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[1]) === pid) children.push(Number(entry));
  }
  return children;
}
