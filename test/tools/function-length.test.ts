// The function-length check of `npm run check`: it finds long functions by the name a reader
// searches for, and fails on a new one and on a known one that is no longer long.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { judge, longFunctions } from '../../tools/function-length/check.js';

/** A function body of `lines` lines in all, declared as `head`. */
function functionOf(head: string, lines: number, tail = '}'): string {
  return [head, ...Array.from({ length: lines - 2 }, (_, index) => `  const v${index} = ${index};`), tail].join('\n');
}

test('a function, a method, a constructor and an arrow function over the bound are each named as a reader would search for them', () => {
  const text = [
    functionOf('export function startEverything() {', 5),
    'class Portal {',
    functionOf('  constructor() {', 4, '  }'),
    functionOf('  async serve(): Promise<void> {', 6, '  }'),
    '}',
    functionOf('const handler = async () => {', 5, '};'),
    functionOf('function short() {', 3),
  ].join('\n');
  assert.deepEqual(
    longFunctions('src/x.ts', text, 3).map(({ key, lines }) => [key, lines]),
    [
      ['src/x.ts:startEverything', 5],
      ['src/x.ts:Portal.constructor', 4],
      ['src/x.ts:Portal.serve', 6],
      ['src/x.ts:handler', 5],
    ],
  );
});

test('a long function not on the known list fails the check, and so does a known one that is no longer long', () => {
  const found = [
    { key: 'src/a.ts:old', line: 1, lines: 90 },
    { key: 'src/b.ts:new', line: 1, lines: 81 },
  ];
  const verdict = judge(found, new Set(['src/a.ts:old', 'src/c.ts:splitSince']));
  assert.deepEqual(
    verdict.unknown.map((item) => item.key),
    ['src/b.ts:new'],
  );
  assert.deepEqual(verdict.paidOff, ['src/c.ts:splitSince']);
});
