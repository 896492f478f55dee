// A real rsyslog (Debian's rsyslogd) as the syslog collector of a test: started from a
// configuration of its own in a temporary folder (`rsyslogd -n -f FILE -i PIDFILE`), with TCP
// (octet counting), UDP and, with certificates, TLS inputs on free loopback ports. Every message
// it receives is written as one JSON line of the fields rsyslog parsed (its RFC 5424 parser and
// mmpstrucdata for the structured data), so a test sees the message as a collector reads it.
// It can be stopped and started again on the same ports (a collector away and back), and
// paused with SIGSTOP (a collector whose system still takes connections and bytes, but that reads
// nothing) and resumed.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort } from './free-port.js';
import { timeLimit } from './until.js';

const run = promisify(execFile);

/** One message as rsyslog parsed it. */
export interface ReceivedMessage {
  /** The input it came in on: `tcp`, `udp` or `tls`. */
  readonly transport: string;
  /** 1 when rsyslog read it as RFC 5424. */
  readonly version: string;
  readonly pri: string;
  readonly timestamp: string;
  readonly hostname: string;
  readonly appName: string;
  readonly procId: string;
  readonly msgId: string;
  /** The structured data as mmpstrucdata parsed it: SD-ID → parameter → value ({} when none). */
  readonly sd: Record<string, Record<string, string>>;
  readonly msg: string;
}

export interface Rsyslog {
  readonly tcpPort: number;
  readonly udpPort: number;
  /** The TLS input's port; null without `tls`. */
  readonly tlsPort: number | null;
  /** The CA of the TLS input's certificate (PEM file), and the name its certificate carries. */
  readonly caFile: string | null;
  readonly serverName: string;
  received(): ReceivedMessage[];
  /** Waits until at least `count` messages arrived (or fails after `ms`). */
  waitFor(count: number, ms?: number): Promise<ReceivedMessage[]>;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP: rsyslogd reads nothing until resumed; its system still accepts connections and fills their buffers. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  close(): Promise<void>;
}

const SERVER_NAME = 'collector.example.test';

/** A JSON line of the parsed fields; the structured data as the object mmpstrucdata made of it. */
const TEMPLATE =
  '{"transport":"%$.transport%","version":"%protocol-version%","pri":"%pri%",' +
  '"timestamp":"%timereported:::date-rfc3339%","hostname":"%hostname:::json%","appName":"%app-name:::json%",' +
  '"procId":"%procid:::json%","msgId":"%msgid:::json%","sd":%$!rfc5424-sd%,"msg":"%msg:::json%"}\\n';

export async function startRsyslog(options: { readonly tls?: boolean } = {}): Promise<Rsyslog> {
  const dir = mkdtempSync(path.join(tmpdir(), 'rsyslog-'));
  const file = (name: string) => path.join(dir, name);
  const tcpPort = await freePort();
  const udpPort = await freeUdpPort();
  const tlsPort = options.tls === true ? await freePort() : null;
  if (tlsPort !== null) await makeCertificates(dir);
  writeFileSync(file('rsyslog.conf'), configuration(dir, tcpPort, udpPort, tlsPort));
  writeFileSync(file('received.jsonl'), '');
  let child: ChildProcess | null = null;
  let output = '';

  const start = async (): Promise<void> => {
    const started = spawn('rsyslogd', ['-n', '-f', file('rsyslog.conf'), '-i', file('rsyslogd.pid')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer): void => {
      output += chunk.toString();
    };
    started.stdout?.on('data', keep);
    started.stderr?.on('data', keep);
    child = started;
    for (let tries = 0; !(await accepts(tcpPort)); tries++) {
      if (started.exitCode !== null || tries > 200) throw new Error(`rsyslogd did not start:\n${output}`);
      await sleep(50);
    }
  };
  const stop = async (): Promise<void> => {
    const running = child;
    child = null;
    if (running === null || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGTERM');
    running.kill('SIGCONT');
    await exited;
  };
  const received = (): ReceivedMessage[] =>
    readFileSync(file('received.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      // A message without structured data leaves mmpstrucdata's object empty.
      .map((line) => JSON.parse(line.replace('"sd":,"', '"sd":{},"')) as ReceivedMessage);

  await start();
  return {
    tcpPort,
    udpPort,
    tlsPort,
    caFile: tlsPort === null ? null : file('ca.pem'),
    serverName: SERVER_NAME,
    received,
    async waitFor(count, ms = 20_000) {
      const limit = timeLimit(ms);
      for (;;) {
        const messages = received();
        if (messages.length >= count) return messages;
        if (limit.passed())
          throw new Error(`rsyslog received ${messages.length} of ${count} messages within ${ms} ms\n${output}`);
        await sleep(100);
      }
    },
    stop,
    start,
    pause() {
      child?.kill('SIGSTOP');
    },
    resume() {
      child?.kill('SIGCONT');
    },
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function configuration(dir: string, tcpPort: number, udpPort: number, tlsPort: number | null): string {
  const tlsGlobals =
    tlsPort === null
      ? ''
      : ` DefaultNetstreamDriverCAFile="${dir}/ca.pem" DefaultNetstreamDriverCertFile="${dir}/server.pem" DefaultNetstreamDriverKeyFile="${dir}/server.key"`;
  const input = (transport: string, extra: string) =>
    `ruleset(name="${transport}") {\n  set $.transport = "${transport}";\n  call parsed\n}\n${extra}`;
  return [
    `global(workDirectory="${dir}"${tlsGlobals})`,
    'module(load="imtcp")',
    'module(load="imudp")',
    'module(load="mmpstrucdata")',
    `template(name="parsed" type="string" string="${TEMPLATE.replace(/"/g, '\\"')}")`,
    `ruleset(name="parsed") {\n  action(type="mmpstrucdata" sd_name.lowercase="off")\n  action(type="omfile" file="${dir}/received.jsonl" template="parsed")\n}`,
    input('tcp', `input(type="imtcp" address="127.0.0.1" port="${tcpPort}" ruleset="tcp")`),
    input('udp', `input(type="imudp" address="127.0.0.1" port="${udpPort}" ruleset="udp")`),
    tlsPort === null
      ? ''
      : input(
          'tls',
          `input(type="imtcp" address="127.0.0.1" port="${tlsPort}" ruleset="tls" streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="anon")`,
        ),
  ].join('\n');
}

/** A CA and a server certificate for SERVER_NAME only (not for 127.0.0.1), made with the real openssl. */
async function makeCertificates(dir: string): Promise<void> {
  const file = (name: string) => path.join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=Test syslog CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign',
  ]);
  await run('openssl', [
    'req',
    ...ec,
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
    '-subj',
    `/CN=${SERVER_NAME}`,
  ]);
  writeFileSync(file('server.ext'), `subjectAltName=DNS:${SERVER_NAME}\nextendedKeyUsage=serverAuth\n`);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('server.pem'),
    '-days',
    '2',
    '-extfile',
    file('server.ext'),
  ]);
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A UDP port free on loopback right now (freePort checks TCP). */
async function freeUdpPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    const socket = createSocket('udp4');
    const bound = await new Promise<boolean>((resolve) => {
      socket.once('error', () => resolve(false));
      socket.bind(port, '127.0.0.1', () => resolve(true));
    });
    if (!bound) continue;
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    return port;
  }
}
