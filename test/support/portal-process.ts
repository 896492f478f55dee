// Runs `vpn-portal …` as an administrator does, as a process of its own: `serve` (reading its
// pino log lines as they arrive) and one-shot commands such as `db copy`.
import { execFile, spawn } from 'node:child_process';
import { LoggedProcess, START_TIMEOUT_MS, vpnPortalCommand } from './logged-process.js';

export type { LogLine } from './logged-process.js';

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `command` as it runs inside network namespace `netns` (`ip netns exec`), or as it is without one. */
function inNamespace(command: readonly string[], netns: string | undefined): string[] {
  return netns === undefined ? [...command] : ['ip', 'netns', 'exec', netns, ...command];
}

/**
 * Runs one `vpn-portal` command to its end; `netns`: inside that network namespace; `user`: as
 * that user (uid and gid) instead of the test's.
 */
export function runCli(
  args: readonly string[],
  options: {
    cwd?: string;
    env?: NodeJS.ProcessEnv;
    netns?: string;
    user?: { readonly uid: number; readonly gid: number };
  } = {},
): Promise<CliResult> {
  const env = options.env === undefined ? undefined : { ...process.env, ...options.env };
  const [command = '', ...commandArgs] = inNamespace([...vpnPortalCommand(), ...args], options.netns);
  return new Promise((resolve) => {
    const user = options.user === undefined ? {} : { uid: options.user.uid, gid: options.user.gid };
    execFile(command, commandArgs, { cwd: options.cwd, env, timeout: 120_000, ...user }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      resolve({ code, stdout, stderr });
    });
  });
}

export class PortalProcess extends LoggedProcess {
  /**
   * `user`: run the portal as this user (uid and gid) instead of the test's, as a service account would.
   * `fileLimit`: the process's open-file limit (soft and hard, set by util-linux `prlimit`, which
   * then becomes the portal process), to see what the portal does when descriptors run short.
   */
  constructor(
    configFile: string | null,
    options: {
      readonly user?: { readonly uid: number; readonly gid: number };
      readonly fileLimit?: number;
      readonly cwd?: string;
      /** Run inside this network namespace: its own loopback, so fixed ports meet nothing else. */
      readonly netns?: string;
      /** Node's options for the process (NODE_OPTIONS), e.g. the heap cap `--max-old-space-size=192` the CLI's shebang sets. */
      readonly nodeOptions?: string;
    } = {},
  ) {
    // null: the embedded default configuration, as the quick start runs it.
    const serve = [...vpnPortalCommand(), 'serve', ...(configFile === null ? [] : ['--config', configFile])];
    const command = inNamespace(
      options.fileLimit === undefined
        ? serve
        : ['prlimit', `--nofile=${options.fileLimit}:${options.fileLimit}`, '--', ...serve],
      options.netns,
    );
    super(
      spawn(command[0] ?? '', command.slice(1), {
        stdio: ['ignore', 'pipe', 'pipe'],
        ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
        ...(options.nodeOptions === undefined
          ? {}
          : {
              env: {
                ...process.env,
                NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} ${options.nodeOptions}`.trim(),
              },
            }),
        ...(options.user === undefined ? {} : { uid: options.user.uid, gid: options.user.gid }),
      }),
    );
  }

  /** Resolves with the portal's base URL (`http://127.0.0.1:PORT`) once it serves. */
  async ready(timeoutMs = START_TIMEOUT_MS): Promise<string> {
    const line = await this.waitFor(
      (entry) => typeof entry.msg === 'string' && entry.msg.startsWith('admin API at '),
      'admin API at',
      timeoutMs,
    );
    const match = /\(listening on (http:\/\/[^)]+)\)/.exec(String(line.msg));
    if (match?.[1] === undefined) throw new Error(`no listening address in "${String(line.msg)}"`);
    return match[1];
  }
}
