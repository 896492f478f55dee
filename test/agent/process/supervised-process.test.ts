// The agent's supervision of a long-running child (wireguard-go, an openvpn server), with a real
// child that crashes: its restarts back off, and only a run of a minute resets the pauses, as
// measured on the monotonic clock, so a step of the wall clock (Date.now(), here a test double
// jumping hours) cannot make a crash loop look healthy.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { SupervisedProcess } from '../../../src/agent/process/supervised-process.js';
import { capturedLog } from '../../support/captured-log.js';
import { until } from '../../support/until.js';

test('a child that crashes soon after its restart is restarted after the longer pause, though the wall clock was set hours forward while it ran', async (t) => {
  const log = capturedLog('warn');
  const supervised = new SupervisedProcess({
    what: 'crasher',
    fields: {},
    logger: log.logger,
    // Ready at once, gone 300 ms later: a crash loop.
    spawn: () => spawn('sleep', ['0.3'], { stdio: ['ignore', 'pipe', 'pipe'] }),
    isReady: () => true,
    readyTimeoutMs: 5_000,
    stopGraceMs: 1_000,
    restartDelaysMs: [50, 60_000],
    onOutput: () => {},
    // Once the restarted child is ready, the wall clock is set 3 hours forward.
    onRestarted: async () => {
      const wallNow = Date.now.bind(Date);
      t.mock.method(Date, 'now', () => wallNow() + 3 * 60 * 60 * 1000);
    },
  });
  t.after(() => supervised.stop());
  await supervised.start();

  const restartPauses = (): unknown[] =>
    log
      .lines()
      .filter((line) => line.msg === 'crasher exited unexpectedly; restarting it')
      .map((line) => line['restartInMs']);
  await until('the restarted child crashed too', async () => restartPauses().length === 2, 5_000);
  assert.deepEqual(
    restartPauses(),
    [50, 60_000],
    'the second crash, 300 ms into its run, waits the second pause: no healthy run reset the pauses',
  );
});
