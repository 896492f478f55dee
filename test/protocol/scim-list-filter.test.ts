// How a SCIM list's filter is read before anything is looked up: a Group list's filter is split at
// `and` only where it is a word of its own outside strings and brackets, whatever the strings
// hold (` and `, escaped quotes, brackets) and however much white space surrounds it, and a filter
// too long or of too many words is refused with 400 invalidFilter before it is read.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  MAX_GROUP_FILTER_WORDS,
  MAX_LIST_FILTER_CHARACTERS,
  readGroupListQuery,
  readListQuery,
  ScimProblem,
  USER_FILTERABLE,
} from '../../src/protocol/scim.js';

const groupFilterOf = (filter: string) => readGroupListQuery({ filter }).filter;

/** Whether `error` is the 400 invalidFilter answer, its detail matching `detail` if given. */
const invalidFilter = (detail?: RegExp) => (error: unknown) =>
  error instanceof ScimProblem &&
  error.status === 400 &&
  error.scimType === 'invalidFilter' &&
  (detail === undefined || detail.test(error.message));

test('a membership check is split at its own "and", not at one inside a group id or member id, quoted, escaped or bracketed', () => {
  assert.deepEqual(groupFilterOf('id eq "Research and Development" and members eq "u and v"'), {
    scimId: 'Research and Development',
    memberId: 'u and v',
  });
  assert.deepEqual(groupFilterOf('id eq "say \\"and\\" here" aNd members eq "ends in \\\\"'), {
    scimId: 'say "and" here',
    memberId: 'ends in \\',
  });
  assert.deepEqual(groupFilterOf('members[value eq "] and ["]\tAND\nid eq "g"'), {
    scimId: 'g',
    memberId: '] and [',
  });
  assert.deepEqual(groupFilterOf('displayName eq "Staff and Guests"'), { displayName: 'Staff and Guests' });
  assert.deepEqual(groupFilterOf('members eq "\\" and id eq \\"g"'), { memberId: '" and id eq "g' });
});

test('"and" joins two comparisons however much white space surrounds it, and when it touches a closing quote or bracket', () => {
  const wide = ` \t${' '.repeat(100)}\n`;
  assert.deepEqual(groupFilterOf(`id eq "g"${wide}and${wide}members eq "u"`), { scimId: 'g', memberId: 'u' });
  assert.deepEqual(groupFilterOf('id eq "g"AND members eq "u"'), { scimId: 'g', memberId: 'u' });
  assert.deepEqual(groupFilterOf('members[value eq "u"]and id eq "g"'), { scimId: 'g', memberId: 'u' });
});

test('a word that only holds "and", an unclosed string and an unmatched bracket are no membership check: the filter is refused', () => {
  for (const filter of [
    'members eq "u" andid eq "g"',
    'members eq "u" band id eq "g"',
    'id eq "g" and members eq "u" and',
    'id eq "g and members eq "u"',
    'members[value eq "u"]] and id eq "g"',
    'members[value eq "u" and id eq "g"',
    'members value eq "u"] and id eq "g"',
  ])
    assert.throws(() => groupFilterOf(filter), invalidFilter(), filter);
});

test('a filter longer than 8,192 characters is refused before it is read, and the longest way to write an externalId is not', () => {
  assert.equal(MAX_LIST_FILTER_CHARACTERS, 8_192);
  const escaped = `urn:ietf:params:scim:schemas:core:2.0:User:externalId eq "${'\\u00e9'.repeat(1_024)}"`;
  assert.deepEqual(readListQuery({ filter: escaped }, USER_FILTERABLE).filter, {
    attribute: 'externalId',
    value: 'é'.repeat(1_024),
  });
  const padded = (length: number) => `displayName eq "${'x'.repeat(length - 'displayName eq ""'.length)}"`;
  assert.deepEqual(groupFilterOf(padded(8_192)), { displayName: 'x'.repeat(8_175) });
  for (const filter of [padded(8_193), `id eq "g" and members eq "u"${' '.repeat(1_000_000)}`, ' and '.repeat(2_000)])
    assert.throws(() => groupFilterOf(filter), invalidFilter(/more than 8,192/), `${filter.length} characters`);
  assert.throws(
    () => readListQuery({ filter: `userName eq "${'a'.repeat(10_000)}"` }, USER_FILTERABLE),
    invalidFilter(/more than 8,192/),
  );
});

test('a Group list filter of more than 32 words is refused however they are joined; one of 32 is read', () => {
  assert.equal(MAX_GROUP_FILTER_WORDS, 32);
  // 3 words, 7 for each term joined to them, and 1: 3 + 4 × 7 + 1 = 32.
  const joined = (terms: number) => `id eq "g"${' and members[value eq "u"]'.repeat(terms)} x`;
  assert.throws(
    () => groupFilterOf(joined(4)),
    invalidFilter(/only displayName eq/),
    'read, and refused as no filter it answers',
  );
  for (const filter of [joined(5), `displayName eq "x"${' x'.repeat(30)}`, `${'"" '.repeat(40)}`, '[]'.repeat(20)])
    assert.throws(() => groupFilterOf(filter), invalidFilter(/more than 32 words/), filter);
});
