// What no database stores as sent, found at any depth of a parsed JSON body: a NUL, a lone surrogate.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unstorableTextIn } from '../../src/shared/storable-text.js';

test('a NUL or a lone surrogate in any string or key of a body is named, with where it is; paired surrogates are text', () => {
  assert.equal(unstorableTextIn({ name: '🙂 \uD83D\uDE42', list: [{ a: 'b' }, 1, null, true] }), null);
  assert.equal(unstorableTextIn({ a: [{ b: 'x\u0000' }] }), 'a NUL character (\\u0000) in a value');
  assert.equal(unstorableTextIn({ ['k\u0000']: 1 }), 'a NUL character (\\u0000) in a name');
  for (const text of ['a\uD800', '\uDC00b', '\uDE42\uD83D'])
    assert.match(String(unstorableTextIn([[{ v: text }]])), /^a lone surrogate .* in a value$/, JSON.stringify(text));
  assert.match(String(unstorableTextIn({ ['\uD800']: 1 })), /^a lone surrogate .* in a name$/);
});
