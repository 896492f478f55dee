// The outline of a PATCH path's filter read before scimmy may parse it: only shapes scimmy reads
// right and in time linear in their length pass (no grouping parentheses, closed strings without
// an escaped quote, no word its lexer would split into a keyword and more, one bracketed filter),
// each accepted shape is parsed by scimmy as it means, and its comparisons are counted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import SCIMMY from 'scimmy';
import { filterShape } from '../../src/protocol/scim-filter-shape.js';

function comparisons(path: string): number {
  const shape = filterShape(path);
  assert.ok(shape.ok, `${path}: ${shape.ok ? '' : shape.why}`);
  return shape.comparisons;
}

function refusal(path: string): string {
  const shape = filterShape(path);
  assert.ok(!shape.ok, `${path} is refused`);
  return shape.why;
}

test('the paths directories send pass, their filter comparisons counted', () => {
  assert.equal(comparisons('active'), 0, 'a path without a filter has none');
  assert.equal(comparisons('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager'), 0);
  assert.equal(comparisons('members[value eq "2819c223-7f76-453a-919d-413861904646"]'), 1);
  assert.equal(comparisons('emails[type eq "work"].value'), 1);
  assert.equal(comparisons('emails[type eq "work" and primary eq true]'), 2);
  assert.equal(comparisons('members[value eq "a" or value eq "b" OR display eq "c"]'), 3, 'in any case');
  assert.equal(comparisons('members[not (display sw "ext-") and type eq "User"]'), 2);
  assert.equal(comparisons('members[display eq "Ann \\\\ Ops" or value pr]'), 2, 'an escaped backslash');
});

test('grouping parentheses are refused: scimmy multiplies groups out, and reads a not over a group wrongly', () => {
  assert.match(refusal('members[(value eq "a" or value eq "b") and display eq "c"]'), /without them/);
  assert.match(refusal('members[not (value eq "a" or value eq "b")]'), /one comparison only/);
  assert.match(refusal('members[not (value eq "a" and value eq "b")]'), /one comparison only/);
  assert.match(refusal('members[not (not (value eq "a"))]'), /one comparison only/);
  assert.match(refusal('members[not (value eq "a"]'), /one comparison only|never closed/);
  assert.match(refusal('members[value eq "a")]'), /no "\(" opened/);
});

test('what scimmy would read otherwise than it looks is refused', () => {
  assert.match(refusal(`members[value eq "${'\\\\'.repeat(30)}`), /never closed/, 'an unclosed string');
  assert.match(refusal('members[value eq "a\\" or value eq "b"]'), /quote/);
  assert.match(refusal('members[value eq "a)" or value eq "b"]'), /may not hold "\)"/);
  assert.match(
    refusal(`members[not (value eq "${'\\\\'.repeat(40)}\\)")]`),
    /may not hold "\)"/,
    'an escaped ")" would end the group inside the string for scimmy, leaving it an unclosed string of backslashes',
  );
  assert.match(
    refusal('members[not (display eq "Sales and Ops")]'),
    /inside "not/,
    'scimmy would compare "Sales and not Ops"',
  );
  assert.equal(comparisons('members[display eq "Sales and Ops"]'), 1, 'outside a not, a value may say "and"');
  assert.match(refusal('members[value eq "a" or$value eq "b"]'), /keyword and more/);
  assert.match(refusal('members[value eq trueor$value eq "b"]'), /keyword and more/);
  assert.match(refusal('members[value eq "a"\nor value eq "b"]'), /control character/);
  assert.match(refusal('emails[type eq "a"].x[type eq "b"]'), /one filter in brackets/);
  assert.match(refusal('members[value eq "a" and]'), /ends with|must join/);
  assert.match(refusal('members[or value eq "a"]'), /must join/);
  assert.match(refusal('members[value eq "a" and or value eq "b"]'), /must join/);
});

test('every filter that passes is parsed by scimmy as one branch per "or", each with its "not"', () => {
  for (const filter of [
    'value eq "a" or value eq "b" or display eq "c"',
    'not (display sw "ext-") and type eq "User" or value eq "x"',
    'value eq "a" and display co "b"',
  ]) {
    const shape = filterShape(`members[${filter}]`);
    assert.ok(shape.ok);
    const branches = JSON.parse(JSON.stringify(new SCIMMY.Types.Filter(filter))) as unknown[];
    assert.equal(branches.length, filter.split(' or ').length, filter);
  }
  assert.deepEqual(JSON.parse(JSON.stringify(new SCIMMY.Types.Filter('not (display sw "ext-") and type eq "User"'))), [
    { display: ['not', 'sw', 'ext-'], type: ['eq', 'User'] },
  ]);
});
