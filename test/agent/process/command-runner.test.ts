// How the agent runs system tools: a tool that never finishes (a `wg` stuck on a hung
// wireguard-go) is killed at its deadline and fails, so whoever waits for it gets an answer.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CommandFailedError,
  createCommandRunner,
  runChecked,
  type CommandResult,
  type CommandRunner,
  type RunOptions,
} from '../../../src/agent/process/command-runner.js';
import { WG_READ_TIMEOUT_MS, WG_WRITE_TIMEOUT_MS, WgTool } from '../../../src/agent/wireguard/wg-tool.js';
import type { WireGuardKey } from '../../../src/shared/ids.js';
import { within } from '../../support/until.js';

describe('running a system tool', () => {
  test('a command still running at its deadline is killed and fails, instead of hanging its caller', async () => {
    const runner = createCommandRunner();
    const result = await within(
      runner.run('sleep', ['3600'], { timeoutMs: 200 }),
      'the hung command is given up',
      10_000,
    );
    assert.notEqual(result.exitCode, 0);
    assert.match(result.stderr, /still running after 200 ms/);

    await assert.rejects(
      within(runChecked(runner, 'sleep', ['3600'], { timeoutMs: 200 }), 'the checked run is given up', 10_000),
      (error: unknown) => error instanceof CommandFailedError && /still running after 200 ms/.test(error.message),
    );
  });

  test('a command whose child keeps the output open is given up at the deadline too', async () => {
    const runner = createCommandRunner();
    // The shell is killed; the backgrounded sleep it leaves behind still holds stdout and stderr.
    const result = await within(
      runner.run('sh', ['-c', 'sleep 3600 & echo $!; wait'], { timeoutMs: 500 }),
      'the hung command is given up',
      10_000,
    );
    const leftOver = Number(result.stdout.trim());
    if (leftOver > 0) process.kill(leftOver, 'SIGKILL');
    assert.ok(leftOver > 0, 'the shell said which process it left behind');
    assert.notEqual(result.exitCode, 0);
  });

  test('a command that finishes in time is not disturbed by its deadline', async () => {
    const result = await createCommandRunner().run('sh', ['-c', 'echo out; echo err >&2'], { timeoutMs: 10_000 });
    assert.deepEqual(result, { exitCode: 0, stdout: 'out\n', stderr: 'err\n' });
  });
});

describe('the wg tool', () => {
  test('every read and write of the interface has a deadline, so a hung wireguard-go fails it', async () => {
    const calls: { args: readonly string[]; timeoutMs: number | undefined }[] = [];
    const recording: CommandRunner = {
      async run(_command: string, args: readonly string[], options?: RunOptions): Promise<CommandResult> {
        calls.push({ args, timeoutMs: options?.timeoutMs });
        return { exitCode: 0, stdout: '', stderr: '' };
      },
      spawn() {
        throw new Error('not used');
      },
    };
    const wg = new WgTool(recording);
    await wg.dump('wg0').catch(() => undefined);
    await wg.applyPeerChanges('wg0', [
      { kind: 'remove', publicKey: 'xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=' as WireGuardKey },
    ]);
    await wg.setListenPort('wg0', 51820);
    await wg.isReachable('wg0');
    assert.deepEqual(
      calls.map((call) => [call.args.slice(0, 2).join(' '), call.args.at(-1), call.timeoutMs]),
      [
        ['show wg0', 'dump', WG_READ_TIMEOUT_MS],
        ['set wg0', 'remove', WG_WRITE_TIMEOUT_MS],
        ['set wg0', '51820', WG_WRITE_TIMEOUT_MS],
        ['show wg0', 'listen-port', WG_WRITE_TIMEOUT_MS],
      ],
    );
  });
});
