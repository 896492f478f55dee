// nginx from Debian as the site's TLS reverse proxy, run by a test: a throw-away certificate
// for an IP address, the example site files (docs/operations.md, docs/devices.md) with the test's
// addresses put in, and an nginx process (on the host or in a namespace) with its own prefix,
// pid file and temp folders.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { hostExec, type Namespace } from './netns.js';

export const NGINX_EXAMPLE = fileURLToPath(new URL('../../examples/nginx/vpn-portal.conf', import.meta.url));
/** The site that asks for the device's MDM certificate and forwards it to `{baseUrl}enroll`. */
export const NGINX_MTLS_EXAMPLE = fileURLToPath(new URL('../../examples/nginx/vpn-portal-mtls.conf', import.meta.url));
/** Every nginx site file the project ships. */
export const NGINX_EXAMPLES = [NGINX_EXAMPLE, NGINX_MTLS_EXAMPLE] as const;

export interface Certificate {
  readonly certificate: string;
  readonly key: string;
}

/** A self-signed certificate (its own CA) for `ipAddress`, valid for a day. */
export async function throwawayCertificate(directory: string, ipAddress: string): Promise<Certificate> {
  const certificate = join(directory, 'cert.pem');
  const key = join(directory, 'key.pem');
  await hostExec('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=vpn-portal test proxy',
    '-addext',
    `subjectAltName=IP:${ipAddress}`,
    '-keyout',
    key,
    '-out',
    certificate,
  ]);
  return { certificate, key };
}

/** An example site file (default: the portal's) with each `from` text replaced by its `to` (every one must occur). */
export function renderExample(
  replacements: readonly (readonly [string, string])[],
  file: string = NGINX_EXAMPLE,
): string {
  let text = readFileSync(file, 'utf8');
  for (const [from, to] of replacements) {
    if (!text.includes(from)) throw new Error(`the nginx example ${file} no longer contains "${from}"`);
    text = text.split(from).join(to);
  }
  return text;
}

export interface RunningNginx {
  readonly child: ChildProcess;
  readonly log: () => string;
  stop(): Promise<void>;
}

/** Runs nginx with `site` in its http block until stop(); in `namespace`, or on the host. */
export async function startNginx(
  directory: string,
  site: string,
  namespace: Namespace | null,
  listen: { host: string; port: number },
): Promise<RunningNginx> {
  const prefix = join(directory, 'nginx');
  mkdirSync(prefix, { recursive: true });
  writeFileSync(join(prefix, 'site.conf'), site);
  const temp = (name: string): string => `${name}_temp_path ${join(prefix, name)};`;
  writeFileSync(
    join(prefix, 'nginx.conf'),
    [
      'user root;',
      'worker_processes 1;',
      'daemon off;',
      'master_process on;',
      `pid ${join(prefix, 'nginx.pid')};`,
      'error_log stderr info;',
      'events { worker_connections 256; }',
      'http {',
      '  access_log off;',
      `  ${temp('client_body')} ${temp('proxy')} ${temp('fastcgi')} ${temp('uwsgi')} ${temp('scgi')}`,
      `  include ${join(prefix, 'site.conf')};`,
      '}',
      '',
    ].join('\n'),
  );
  const args = ['-p', prefix, '-c', join(prefix, 'nginx.conf')];
  const child =
    namespace === null ? spawn('nginx', args, { stdio: ['ignore', 'pipe', 'pipe'] }) : namespace.spawn('nginx', args);
  const output: string[] = [];
  child.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  // Ready once it accepts connections on its address.
  const probe =
    namespace === null
      ? (command: string, args: readonly string[]) => hostExec(command, args)
      : namespace.exec.bind(namespace);
  for (let waited = 0; ; waited += 100) {
    const { stdout } = await probe('ss', ['-Htln', `( sport = :${listen.port} )`]);
    if (stdout.includes(`${listen.host}:${listen.port}`)) break;
    if (child.exitCode !== null || waited > 10_000) throw new Error(`nginx did not start:\n${output.join('')}`);
    await sleep(100);
  }
  return {
    child,
    log: () => output.join(''),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}
