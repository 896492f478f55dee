// JSON in parts: what is sent is exactly the JSON the parts spell, and a kept listing is
// extended without being copied.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appendToJsonArray, jsonPartsByteLength, type JsonParts } from '../../src/shared/json-parts.js';

const joined = (parts: JsonParts): string => parts.map((part) => part.toString()).join('');

test('connections added to a kept array give one valid array, and the kept bytes are not copied', () => {
  const kept = Buffer.from('[{"user_id":"ann"},{"user_id":"bob"}]');
  const parts = appendToJsonArray(kept, '{"user_id":"carol"}');
  assert.deepEqual(JSON.parse(joined(parts)), [{ user_id: 'ann' }, { user_id: 'bob' }, { user_id: 'carol' }]);
  const [first] = parts;
  assert.ok(Buffer.isBuffer(first) && first.buffer === kept.buffer, 'the kept Buffer is sent as it is (a view, no copy)');
});

test('an empty kept array and an empty addition both stay valid JSON', () => {
  assert.deepEqual(JSON.parse(joined(appendToJsonArray(Buffer.from('[]'), '"x"'))), ['x']);
  assert.deepEqual(JSON.parse(joined(appendToJsonArray(Buffer.from('[]'), ''))), []);
  assert.deepEqual(JSON.parse(joined(appendToJsonArray(Buffer.from('["a"]'), ''))), ['a']);
});

test('the byte length counts UTF-8 bytes, not characters', () => {
  const parts = ['{"name":"', Buffer.from('Zoë 🚀'), '"}'];
  assert.equal(jsonPartsByteLength(parts), Buffer.byteLength(joined(parts)));
  assert.equal(jsonPartsByteLength(['ë']), 2);
});
