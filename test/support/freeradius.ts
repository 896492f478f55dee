// A real FreeRADIUS (Debian's `freeradius`) for the accounting tests: a minimal configuration of
// its own in a temporary folder (one client with the shared secret, an accounting listener on a
// free UDP port, the `detail` module writing every Accounting-Request it accepts), started in the
// foreground, stopped and removed by `close`. `stop` and `start` take it away and bring it back
// on the same port and detail file, as an outage would.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSocket } from 'node:dgram';
import { isIP } from 'node:net';
import { randomInt } from 'node:crypto';
import { until } from './until.js';

export interface FreeRadius {
  readonly host: string;
  readonly port: number;
  readonly secret: string;
  /** Every record the detail file holds, as attribute name → value (quotes removed). */
  records(): Promise<Record<string, string>[]>;
  /** What FreeRADIUS printed (its debug output): why a request was refused. */
  output(): string;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

/** A UDP port nobody listens on right now (below the ephemeral range, as free-port.ts does for TCP). */
async function freeUdpPort(host: string): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = randomInt(10_000, 30_000);
    const socket = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4');
    const free = await new Promise<boolean>((resolve) => {
      socket.once('error', () => resolve(false));
      socket.bind(port, host, () => resolve(true));
    });
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    if (free) return port;
  }
  throw new Error('no free UDP port');
}

function configuration(dir: string, host: string, port: number, secret: string): string {
  return `prefix = /usr
exec_prefix = /usr
sysconfdir = /etc
localstatedir = ${dir}
sbindir = /usr/sbin
logdir = ${dir}
raddbdir = ${dir}
radacctdir = ${dir}/acct
name = freeradius
confdir = ${dir}
modconfdir = ${dir}
run_dir = ${dir}
db_dir = ${dir}
libdir = /usr/lib/freeradius
pidfile = ${dir}/radiusd.pid
max_request_time = 30
cleanup_delay = 5
max_requests = 1024
hostname_lookups = no
log {
  destination = stdout
}
security {
  allow_core_dumps = no
}
client portal {
  ipaddr = ${host}
  secret = "${secret}"
}
modules {
  detail {
    filename = \${radacctdir}/detail
    permissions = 0600
    header = "%t"
  }
}
server default {
  listen {
    type = acct
    ipaddr = ${host}
    port = ${port}
  }
  preacct {
  }
  accounting {
    detail
  }
}
`;
}

/** Parses FreeRADIUS's detail file: records separated by blank lines, `Name = value` lines indented. */
export function parseDetail(text: string): Record<string, string>[] {
  return text
    .split(/\n\s*\n/)
    .map((block) => block.trim())
    .filter((block) => block !== '')
    .map((block) => {
      const record: Record<string, string> = {};
      for (const line of block.split('\n').slice(1)) {
        const match = /^\s*([\w-]+) = (.*)$/.exec(line);
        if (match?.[1] !== undefined && match[2] !== undefined) record[match[1]] = match[2].replace(/^"(.*)"$/, '$1');
      }
      return record;
    });
}

export async function startFreeRadius(
  options: { readonly host?: string; readonly secret?: string } = {},
): Promise<FreeRadius> {
  const host = options.host ?? '127.0.0.1';
  const secret = options.secret ?? `radius-${randomInt(1e9)}`;
  const dir = await mkdtemp(join(tmpdir(), 'freeradius-'));
  await mkdir(join(dir, 'acct'));
  const port = await freeUdpPort(host);
  await writeFile(join(dir, 'radiusd.conf'), configuration(dir, host, port, secret), { mode: 0o600 });
  let child: ChildProcess | null = null;
  let printed = '';
  const start = async (): Promise<void> => {
    const started = spawn('freeradius', ['-f', '-X', '-d', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    // Ready when this run says so: `printed` holds the runs before it too.
    let thisRun = '';
    const ready = new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer): void => {
        printed += chunk.toString();
        thisRun += chunk.toString();
        if (thisRun.includes('Ready to process requests')) resolve();
      };
      started.stdout?.on('data', onData);
      started.stderr?.on('data', onData);
      started.once('exit', (code) => reject(new Error(`freeradius exited with ${code}:\n${printed}`)));
    });
    await ready;
  };
  const stop = async (): Promise<void> => {
    const running = child;
    child = null;
    if (running === null || running.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGTERM');
    await exited;
  };
  await start();
  return {
    host,
    port,
    secret,
    async records() {
      return parseDetail(await readFile(join(dir, 'acct', 'detail'), 'utf8').catch(() => ''));
    },
    output: () => printed,
    stop,
    start,
    async close() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Waits until the detail file holds a record matching `match`, and answers it. */
export async function detailRecord(
  radius: FreeRadius,
  what: string,
  match: (record: Record<string, string>) => boolean,
  ms = 60_000,
): Promise<Record<string, string>> {
  let found: Record<string, string> | undefined;
  await until(
    what,
    async () => {
      found = (await radius.records()).find(match);
      return found !== undefined;
    },
    ms,
  );
  if (found === undefined) throw new Error(`no ${what}`);
  return found;
}
