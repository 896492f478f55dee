// Query strings and form bodies as the portal reads them: UTF-8 text, `+` a space, a name given
// twice a list, and a value whose percent-encoding is no UTF-8 marked rather than kept as sent.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFormText, UndecodableValue } from '../../../src/http/plumbing/form-text.js';

test('a form is read as UTF-8 text; a value that is not is marked undecodable, a name that is not matches nothing', () => {
  assert.deepEqual(
    { ...parseFormText('a=1&b=x+y&a=2&c&=e&&d=%C3%B6%25') },
    { a: ['1', '2'], b: 'x y', c: '', '': 'e', d: 'ö%' },
  );
  const values = parseFormText('user_id=j%F6rg&half=%ED%A0%80&bad=%ZZ&%FF=x');
  assert.deepEqual(values['user_id'], new UndecodableValue('j%F6rg'));
  assert.deepEqual(values['half'], new UndecodableValue('%ED%A0%80'));
  assert.equal(values['bad'], '%ZZ', 'a % without two hex digits is itself');
  assert.equal(values['%FF'], 'x');
  // A raw byte that is no UTF-8 arrives as U+FFFD (the body was decoded before); sent percent-encoded, U+FFFD is text.
  assert.deepEqual(parseFormText('user_id=j\uFFFDrg')['user_id'], new UndecodableValue('j\uFFFDrg'));
  assert.equal(parseFormText('v=%EF%BF%BD')['v'], '\uFFFD');
  const proto = parseFormText('__proto__=x&constructor=y');
  // Read as an own property: a field named __proto__ is data here, not the prototype.
  assert.equal(Object.getOwnPropertyDescriptor(proto, '__proto__')?.value, 'x');
  assert.equal(proto['constructor'], 'y');
  assert.equal(Object.getPrototypeOf(proto), null);
});
