// Runs the system's tools (`ip`, `wg`, `wireguard-go`, `openvpn`), optionally prefixed (a
// network namespace in tests); the one place where the agent starts processes.
import { spawn, type ChildProcess } from 'node:child_process';

export interface CommandResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface RunOptions {
  /** Written to the command's standard input, then closed (how private keys reach `wg`). */
  readonly stdin?: string;
  /**
   * A command still running after this long is killed (SIGKILL) and fails: a tool stuck on a
   * hung peer (wireguard-go alive but not answering) must not hold its caller forever.
   */
  readonly timeoutMs?: number;
}

export interface SpawnOptions {
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * How the agent starts the system tools (`ip`, `wg`, `wireguard-go`). Injected so tests can run
 * them inside a network namespace or count `wg` invocations.
 */
export interface CommandRunner {
  run(command: string, args: readonly string[], options?: RunOptions): Promise<CommandResult>;
  /** Starts a long-running child (wireguard-go) with piped stdout/stderr. */
  spawn(command: string, args: readonly string[], options?: SpawnOptions): ChildProcess;
}

export class CommandFailedError extends Error {
  constructor(
    readonly command: string,
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    // Only the command name and its stderr: arguments and stdout may carry keys.
    super(`${command} failed with exit code ${exitCode}: ${stderr.trim() || '(no error output)'}`);
    this.name = 'CommandFailedError';
  }
}

/** Runs a command and throws CommandFailedError unless it exits with 0. */
export async function runChecked(
  runner: CommandRunner,
  command: string,
  args: readonly string[],
  options?: RunOptions,
): Promise<CommandResult> {
  const result = await runner.run(command, args, options);
  if (result.exitCode !== 0)
    throw new CommandFailedError(`${command} ${args[0] ?? ''}`.trim(), result.exitCode, result.stderr);
  return result;
}

/**
 * Runs commands directly, or behind a prefix such as `ip netns exec NAME` (which execs the
 * command in place, so a spawned child's pid is the tool's own pid).
 */
export function createCommandRunner(options: { prefix?: readonly string[] } = {}): CommandRunner {
  const prefix = options.prefix ?? [];
  const resolve = (command: string, args: readonly string[]): [string, string[]] => {
    const [head, ...rest] = [...prefix, command, ...args];
    return [head ?? command, rest];
  };

  return {
    run(command, args, runOptions = {}) {
      const [file, argv] = resolve(command, args);
      return new Promise((resolvePromise, reject) => {
        const child = spawn(file, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
        const stdout: Buffer[] = [];
        const stderr: Buffer[] = [];
        let timedOut = false;
        const timer =
          runOptions.timeoutMs === undefined
            ? null
            : setTimeout(() => {
                timedOut = true;
                child.kill('SIGKILL');
                // A child of the tool may still hold the pipes open; the answer must not wait for it.
                child.stdout.destroy();
                child.stderr.destroy();
              }, runOptions.timeoutMs);
        child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
        child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
        child.on('error', (error) => {
          if (timer !== null) clearTimeout(timer);
          reject(error);
        });
        child.on('close', (code, signal) => {
          if (timer !== null) clearTimeout(timer);
          const output = Buffer.concat(stderr).toString('utf8');
          resolvePromise({
            exitCode: timedOut ? 128 : (code ?? (signal === null ? 1 : 128)),
            stdout: Buffer.concat(stdout).toString('utf8'),
            stderr: timedOut ? `${output}killed: still running after ${runOptions.timeoutMs} ms\n` : output,
          });
        });
        // A tool that exits without reading stdin makes the pipe fail with EPIPE; its exit code tells.
        child.stdin.on('error', () => undefined);
        child.stdin.end(runOptions.stdin ?? '');
      });
    },

    spawn(command, args, spawnOptions = {}) {
      const [file, argv] = resolve(command, args);
      return spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: spawnOptions.env ?? process.env });
    },
  };
}
