// The clean-up stack: stops run in reverse order of their parts' starts, every one of them even
// when one fails (that one is logged), each once; a start that fails stops what it started.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Teardown } from '../../src/shared/teardown.js';

function recordingLogger(): { readonly logged: string[]; error(fields: { part?: string }, message: string): void } {
  const logged: string[] = [];
  return {
    logged,
    error(fields, message) {
      logged.push(`${fields.part}: ${message}`);
    },
  };
}

test('the stops run in reverse order of registration, each once', async () => {
  const stopped: string[] = [];
  const teardown = new Teardown(recordingLogger());
  teardown.defer('database', () => void stopped.push('database'));
  teardown.defer('server', async () => {
    await new Promise((resolve) => setTimeout(resolve, 5));
    stopped.push('server');
  });
  teardown.defer('scheduler', () => void stopped.push('scheduler'));
  await teardown.runAll();
  await teardown.runAll();
  assert.deepEqual(stopped, ['scheduler', 'server', 'database']);
});

test('a stop that fails is logged and the stops after it still run', async () => {
  const stopped: string[] = [];
  const logger = recordingLogger();
  const teardown = new Teardown(logger);
  teardown.defer('database', () => void stopped.push('database'));
  teardown.defer('server', () => {
    throw new Error('socket already gone');
  });
  teardown.defer('scheduler', () => Promise.reject(new Error('stuck')));
  teardown.defer('worker', () => void stopped.push('worker'));
  await teardown.runAll();
  assert.deepEqual(stopped, ['worker', 'database']);
  assert.deepEqual(logger.logged, ['scheduler: scheduler failed to stop', 'server: server failed to stop']);
});

test('a start that fails stops the parts it started, and throws its own error', async () => {
  const stopped: string[] = [];
  const teardown = new Teardown(recordingLogger());
  const failure = new Error('port taken');
  await assert.rejects(
    teardown.starting(async () => {
      teardown.defer('database', () => void stopped.push('database'));
      teardown.defer('node clients', () => void stopped.push('node clients'));
      throw failure;
    }),
    (error) => error === failure,
  );
  assert.deepEqual(stopped, ['node clients', 'database']);
});
