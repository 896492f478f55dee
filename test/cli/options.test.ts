// The suggestion for a mistyped option: the nearest known name, and none when nothing is close.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeUnknownOption, editDistance } from '../../src/cli/options.js';

test('the edit distance counts insertions, deletions and substitutions', () => {
  assert.equal(editDistance('expire-in', 'expires-in'), 1);
  assert.equal(editDistance('', 'abc'), 3);
  assert.equal(editDistance('kitten', 'sitting'), 3);
  assert.equal(editDistance('same', 'same'), 0);
});

test('an unknown option is named with the nearest known one only when it is close', () => {
  assert.equal(
    describeUnknownOption('--expire-in', ['config', 'expires-in', 'format']),
    'unknown option --expire-in (did you mean --expires-in?)',
  );
  assert.equal(describeUnknownOption('--frobnicate', ['config', 'json']), 'unknown option --frobnicate');
  assert.equal(describeUnknownOption('-x', []), 'unknown option -x');
});
