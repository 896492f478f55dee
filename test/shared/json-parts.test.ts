// JSON in parts: what is sent is exactly the JSON the parts spell, pages of a listing join into
// one array, and a kept listing is extended without being copied.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  appendToJsonArray,
  jsonArrayOfPages,
  jsonPartsByteLength,
  jsonPartsText,
} from '../../src/shared/json-parts.js';

test('connections added to a kept array give one valid array, and the kept bytes are not copied', () => {
  const kept = Buffer.from('[{"user_id":"ann"},{"user_id":"bob"}]');
  const parts = appendToJsonArray([kept], '{"user_id":"carol"}');
  assert.deepEqual(JSON.parse(jsonPartsText(parts)), [{ user_id: 'ann' }, { user_id: 'bob' }, { user_id: 'carol' }]);
  const [first] = parts;
  assert.ok(
    Buffer.isBuffer(first) && first.buffer === kept.buffer,
    'the kept Buffer is sent as it is (a view, no copy)',
  );
});

test('an empty kept array and an empty addition both stay valid JSON', () => {
  assert.deepEqual(JSON.parse(jsonPartsText(appendToJsonArray([Buffer.from('[]')], '"x"'))), ['x']);
  assert.deepEqual(JSON.parse(jsonPartsText(appendToJsonArray([Buffer.from('[]')], ''))), []);
  assert.deepEqual(JSON.parse(jsonPartsText(appendToJsonArray([Buffer.from('["a"]')], ''))), ['a']);
});

test('pages of an array join into one array in their order, empty pages and no pages included', () => {
  const pages = ['[1,2]', '[]', '[3]', '[{"a":[4,5]}]'].map((page) => Buffer.from(page));
  const parts = jsonArrayOfPages(pages);
  assert.deepEqual(JSON.parse(jsonPartsText(parts)), [1, 2, 3, { a: [4, 5] }]);
  assert.ok(
    parts.some((part) => Buffer.isBuffer(part) && part.buffer === pages[0]?.buffer),
    'the pages are sent as they are (views, no copies)',
  );
  assert.deepEqual(JSON.parse(jsonPartsText(jsonArrayOfPages([]))), []);
  assert.deepEqual(JSON.parse(jsonPartsText(jsonArrayOfPages([Buffer.from('[]')]))), []);
});

test('connections added to joined pages give one valid array', () => {
  const parts = appendToJsonArray(jsonArrayOfPages([Buffer.from('["a"]'), Buffer.from('["b"]')]), '"c","d"');
  assert.deepEqual(JSON.parse(jsonPartsText(parts)), ['a', 'b', 'c', 'd']);
  assert.deepEqual(JSON.parse(jsonPartsText(appendToJsonArray(jsonArrayOfPages([]), '"c"'))), ['c']);
});

test('the byte length counts UTF-8 bytes, not characters', () => {
  const parts = ['{"name":"', Buffer.from('Zoë 🚀'), '"}'];
  assert.equal(jsonPartsByteLength(parts), Buffer.byteLength(jsonPartsText(parts)));
  assert.equal(jsonPartsByteLength(['ë']), 2);
});
