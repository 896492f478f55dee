// The SCIM wire module on its own: what Entra ID and Okta write is read as RFC 7643/7644 has it
// (operations in capitals, booleans as strings, values without a path, member removal by
// filter, attribute names in any case or URN-qualified, the PatchOp message's own names in any
// case), what the portal owns or must not keep is not kept, a filter other than one equality is
// refused with invalidFilter and its value read as a JSON string, and a PATCH is bounded:
// members by id, 100 operations, 100,000 members.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  assertStorableText,
  GROUP_FILTERABLE,
  readGroupAttributes,
  MAX_GROUP_MEMBERS,
  patchGroup,
  patchUser,
  readGroup,
  readGroupListQuery,
  readListQuery,
  readUser,
  ScimProblem,
  USER_FILTERABLE,
  type ScimGroupView,
  type ScimUserView,
} from '../../src/protocol/scim.js';

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const alice: ScimUserView = {
  id: 'u-1',
  userName: 'alice',
  externalId: 'a-1',
  active: true,
  attributes: { displayName: 'Alice', emails: [{ value: 'alice@example.org', primary: true }] },
  created: '2026-03-02T09:00:00+00:00',
  lastModified: '2026-03-02T09:00:00+00:00',
};

test("Entra ID's PATCH forms disable and enable: capital ops, string booleans, with and without a path", async () => {
  const forms: [unknown, boolean][] = [
    [{ op: 'Replace', path: 'active', value: 'False' }, false],
    [{ op: 'Replace', value: { active: 'false' } }, false],
    [{ op: 'replace', value: { active: false } }, false],
    [{ op: 'Replace', path: 'active', value: 'True' }, true],
  ];
  for (const [operation, active] of forms) {
    const patched = await patchUser(alice, { schemas: [PATCH], Operations: [operation] }, 'https://x/Users/u-1');
    assert.equal(patched.active, active, JSON.stringify(operation));
    assert.equal(patched.userName, 'alice');
    assert.deepEqual(patched.attributes, alice.attributes);
  }
});

test('a PATCH that names no active carries none, so that it neither enables nor disables the user; one that names it, by path (also URN-qualified) or in a value, does', async () => {
  const patched = (...operations: unknown[]) =>
    patchUser(alice, { schemas: [PATCH], Operations: operations }, 'https://x/Users/u-1');
  const title = await patched({ op: 'replace', path: 'title', value: 'CTO' });
  assert.equal(title.active, null);
  assert.equal(title.attributes['title'], 'CTO');
  assert.equal((await patched({ op: 'replace', value: { displayName: 'Al' } })).active, null);
  for (const operation of [
    { op: 'replace', path: 'Active', value: true },
    { op: 'replace', path: 'urn:ietf:params:scim:schemas:core:2.0:User:active', value: false },
    { op: 'replace', value: { title: 'CTO', active: false } },
  ])
    assert.notEqual((await patched(operation)).active, null, JSON.stringify(operation));
  assert.equal(
    (await patched({ op: 'replace', path: 'title', value: 'CTO' }, { op: 'replace', path: 'active', value: false }))
      .active,
    false,
  );
});

test('a user as created keeps its attributes but never id, meta, active, groups or a password', () => {
  const read = readUser({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    id: 'chosen-by-client',
    userName: 'bob',
    active: 'False',
    password: 'hunter2',
    groups: [{ value: 'g' }],
    meta: { resourceType: 'User' },
    name: { givenName: 'Bob' },
    emails: [{ value: 'bob@example.org', primary: 'True' }],
  });
  assert.deepEqual(read, {
    userName: 'bob',
    externalId: null,
    active: false,
    attributes: { name: { givenName: 'Bob' }, emails: [{ value: 'bob@example.org', primary: true }] },
  });
  assert.throws(() => readUser({ userName: '' }), ScimProblem);
  assert.throws(() => readUser([]), { message: 'the request body must be a JSON object' });
});

test('group members are added, removed by filter and replaced', async () => {
  const group: ScimGroupView = {
    id: 'g-1',
    displayName: 'Staff',
    externalId: null,
    members: [
      { value: 'u-1', display: 'alice' },
      { value: 'u-2', display: 'bob' },
    ],
    created: '2026-03-02T09:00:00+00:00',
    lastModified: '2026-03-02T09:00:00+00:00',
  };
  const patched = async (...operations: unknown[]) =>
    (await patchGroup(group, { schemas: [PATCH], Operations: operations }, 'https://x/Groups/g-1')).memberIds;
  assert.deepEqual(await patched({ op: 'Remove', path: 'members[value eq "u-1"]' }), ['u-2']);
  assert.deepEqual(await patched({ op: 'Add', path: 'members', value: [{ value: 'u-3' }] }), ['u-1', 'u-2', 'u-3']);
  assert.deepEqual(await patched({ op: 'Replace', path: 'members', value: [{ value: 'u-9' }] }), ['u-9']);
  assert.deepEqual(await patched({ op: 'Remove', path: 'members' }), []);
});

test('a directory removes members by any filter RFC 7644 allows; a members path the portal does not apply is refused, never answered as applied', async () => {
  const group: ScimGroupView = {
    id: 'g-1',
    displayName: 'Staff',
    externalId: null,
    members: [
      { value: 'u-1', display: 'alice' },
      { value: 'u-2', display: 'bob' },
      { value: 'u-3', display: 'Carol@Example.org' },
    ],
    created: '2026-03-02T09:00:00+00:00',
    lastModified: '2026-03-02T09:00:00+00:00',
  };
  const left = async (...operations: unknown[]) =>
    (await patchGroup(group, { schemas: [PATCH], Operations: operations }, 'https://x/Groups/g-1')).memberIds;
  const removed = (filter: string) => left({ op: 'remove', path: `members[${filter}]` });
  assert.deepEqual(await removed('value eq "u-1" or value eq "u-2"'), ['u-3']);
  assert.deepEqual(await removed('display eq "carol@example.org"'), ['u-1', 'u-2'], 'display as userName: any case');
  assert.deepEqual(await removed('not (display sw "a") and type eq "user"'), ['u-1']);
  assert.deepEqual(await removed('value eq "u-\\u0032"'), ['u-1', 'u-3'], 'the value is a JSON string');
  assert.deepEqual(await removed('value eq "u-9"'), ['u-1', 'u-2', 'u-3'], 'nobody selected: nobody to remove');
  assert.deepEqual(
    await left(
      { op: 'add', path: 'members', value: [{ value: 'u-4', display: 'dan' }] },
      { op: 'remove', path: 'members[display eq "DAN"]' },
    ),
    ['u-1', 'u-2', 'u-3'],
    'a member added earlier in the PATCH is selected too',
  );

  const refusal = async (operation: unknown, scimType: string, detail: RegExp) =>
    assert.rejects(left(operation), (error: unknown) => {
      assert.ok(error instanceof ScimProblem, String(error));
      assert.deepEqual([error.status, error.scimType], [400, scimType], error.message);
      assert.match(error.message, detail);
      return true;
    });
  await refusal(
    { op: 'remove', path: 'members[emails eq "x"]' },
    'invalidFilter',
    /a member has no attribute "emails"/,
  );
  await refusal(
    { op: 'remove', path: 'members[value eq "u-1" or display zz "bob"]' },
    'invalidFilter',
    /not a filter this portal can read/,
  );
  await refusal(
    { op: 'remove', path: 'members[value eq "u-1" or (display eq "bob"]' },
    'invalidFilter',
    /parentheses may only hold/,
  );
  await refusal({ op: 'remove', path: 'members[value eq]' }, 'invalidFilter', /needs a quoted string/);
  await refusal({ op: 'remove', path: 'members[value eq 1]' }, 'invalidFilter', /needs a quoted string/);
  await refusal({ op: 'remove', path: 'members[value eq "\\q"]' }, 'invalidFilter', /not a well-formed string/);
  await refusal({ op: 'remove', path: 'members[display eq "\\q"]' }, 'invalidFilter', /not a well-formed string/);
  await refusal({ op: 'remove', path: 'members[value[x eq "y"]]' }, 'invalidFilter', /one filter in brackets/);
  await refusal({ op: 'remove', path: 'members[value eq "u-1"].display' }, 'invalidPath', /removed whole/);
  await refusal({ op: 'remove', path: 'members.display' }, 'invalidPath', /removed whole/);
  for (const op of ['add', 'replace'])
    await refusal(
      { op, path: 'members[value eq "u-1"]', value: { value: 'u-5' } },
      'invalidPath',
      /does not take a filter/,
    );
});

test('the filters of one group PATCH that go over every member are bounded: past 5,000,000 comparisons the PATCH is refused with tooMany', async () => {
  const group: ScimGroupView = {
    id: 'g-2',
    displayName: 'All staff',
    externalId: null,
    members: Array.from({ length: 50_000 }, (_, index) => ({ value: `u-${index}`, display: `user ${index}` })),
    created: '2026-03-02T09:00:00+00:00',
    lastModified: '2026-03-02T09:00:00+00:00',
  };
  const scans = (count: number) =>
    Array.from({ length: count }, (_, index) => ({ op: 'remove', path: `members[display sw "user ${index} "]` }));
  const hundred = await patchGroup(group, { schemas: [PATCH], Operations: scans(100) }, 'https://x/Groups/g-2');
  assert.equal(hundred.memberIds.length, 50_000, 'a hundred scans of 50,000 are within the bound');
  const lookups = Array.from({ length: 100 }, (_, index) => ({
    op: 'remove',
    path: `members[display eq "user ${index}" or value eq "u-${index + 100}"]`,
  }));
  const looked = await patchGroup(group, { schemas: [PATCH], Operations: lookups }, 'https://x/Groups/g-2');
  assert.equal(looked.memberIds.length, 50_000 - 200, 'lookups by display or value cost nothing of it');
  await assert.rejects(
    patchGroup(
      group,
      {
        schemas: [PATCH],
        Operations: [{ op: 'remove', path: 'members[display co "x" or display co "y"]' }, ...scans(99)],
      },
      'https://x/Groups/g-2',
    ),
    (error: unknown) => error instanceof ScimProblem && error.status === 400 && error.scimType === 'tooMany',
  );
});

test('a group PATCH with an operation that is no object (null) is refused, as a user PATCH is, and not answered as if applied', async () => {
  const group: ScimGroupView = {
    id: 'g-1',
    displayName: 'Staff',
    externalId: null,
    members: [{ value: 'u-1', display: 'alice' }],
    created: '2026-03-02T09:00:00+00:00',
    lastModified: '2026-03-02T09:00:00+00:00',
  };
  const refused = (error: unknown) => error instanceof ScimProblem && error.status === 400;
  await assert.rejects(patchUser(alice, { schemas: [PATCH], Operations: [null] }, 'https://x/Users/u-1'), refused);
  await assert.rejects(patchGroup(group, { schemas: [PATCH], Operations: [null] }, 'https://x/Groups/g-1'), refused);
  await assert.rejects(
    patchGroup(
      group,
      { schemas: [PATCH], Operations: [{ op: 'remove', path: 'members[value eq "u-1"]' }, null] },
      'https://x/Groups/g-1',
    ),
    refused,
  );
});

test('a large group loses and gains members by id in one PATCH, with a display name changed beside them, and a member without an id is refused', async () => {
  const group: ScimGroupView = {
    id: 'g-2',
    displayName: 'All staff',
    externalId: null,
    members: Array.from({ length: 5000 }, (_, index) => ({ value: `u-${index}`, display: `user ${index}` })),
    created: '2026-03-02T09:00:00+00:00',
    lastModified: '2026-03-02T09:00:00+00:00',
  };
  const removals = Array.from({ length: 80 }, (_, index) => ({ op: 'remove', path: `members[value eq "u-${index}"]` }));
  const patched = await patchGroup(
    group,
    {
      schemas: [PATCH],
      Operations: [
        ...removals,
        // Entra ID's form: no path, a partial resource with members and another attribute.
        { op: 'Add', value: { members: [{ value: 'u-new' }], displayName: 'Everyone' } },
        { op: 'Remove', path: 'members', value: [{ value: 'u-4999' }] },
      ],
    },
    'https://x/Groups/g-2',
  );
  assert.equal(patched.displayName, 'Everyone');
  assert.equal(patched.memberIds.length, 5000 - 80 - 1 + 1);
  assert.deepEqual(patched.memberIds.slice(0, 2), ['u-80', 'u-81']);
  assert.equal(patched.memberIds.at(-1), 'u-new');
  assert.ok(!patched.memberIds.includes('u-4999'));
  await assert.rejects(
    patchGroup(
      group,
      { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ display: 'x' }] }] },
      'x',
    ),
    (error: unknown) => error instanceof ScimProblem && error.status === 400 && /each member needs/.test(error.message),
  );
});

test('a PATCH whose Operations hide under a "__proto__" key is refused: that key is no way to the request\'s names', async () => {
  const body: unknown = JSON.parse(
    `{"schemas": ["${PATCH}"], "__proto__": {"Operations": [{"op": "replace", "path": "displayName", "value": "Mallory"}]}}`,
  );
  await assert.rejects(
    patchUser(alice, body, 'https://x/Users/u-1'),
    (error: unknown) => error instanceof ScimProblem && error.status === 400 && /Operations/.test(error.message),
  );
});

test('a PATCH of more than 100 operations is refused with tooMany, before any is applied', async () => {
  const operations = Array.from({ length: 101 }, () => ({ op: 'replace', path: 'displayName', value: 'A' }));
  await assert.rejects(
    patchUser(alice, { schemas: [PATCH], Operations: operations }, 'https://x/Users/u-1'),
    (error: unknown) => error instanceof ScimProblem && error.status === 400 && error.scimType === 'tooMany',
  );
});

test('a list query takes one equality filter on a named attribute, and pages from 1 with at most 200', () => {
  assert.deepEqual(readListQuery({ filter: 'userName eq "alice"' }, USER_FILTERABLE), {
    startIndex: 1,
    count: 200,
    filter: { attribute: 'userName', value: 'alice' },
  });
  assert.deepEqual(readListQuery({ startIndex: '0', count: '5000' }, USER_FILTERABLE), {
    startIndex: 1,
    count: 200,
    filter: null,
  });
  assert.deepEqual(readListQuery({ startIndex: '-5', count: '-1' }, USER_FILTERABLE), {
    startIndex: 1,
    count: 0,
    filter: null,
  });
  for (const filter of ['userName eq "a" and active eq true', 'displayName eq "x"', 'userName co "a"', 'userName eq 1'])
    assert.throws(
      () => readListQuery({ filter }, USER_FILTERABLE),
      (error: unknown) => error instanceof ScimProblem && error.scimType === 'invalidFilter',
      filter,
    );
});

test("Entra ID's enterprise attributes are kept, and a typed entry the user lacks is added rather than refused", async () => {
  const enterprise = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
  const bare: ScimUserView = { ...alice, attributes: {} };
  const patched = await patchUser(
    bare,
    {
      schemas: [PATCH],
      Operations: [
        { op: 'Add', path: 'emails[type eq "work"].value', value: 'alice@example.org' },
        { op: 'Add', path: `${enterprise}:department`, value: 'Research' },
      ],
    },
    'https://x/Users/u-1',
  );
  assert.deepEqual(patched.attributes, {
    emails: [{ type: 'work', value: 'alice@example.org' }],
    [enterprise]: { department: 'Research' },
  });
  const replaced = await patchUser(
    { ...bare, attributes: patched.attributes },
    { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'emails[type eq "work"].value', value: 'a@example.org' }] },
    'https://x/Users/u-1',
  );
  assert.deepEqual(replaced.attributes['emails'], [{ type: 'work', value: 'a@example.org' }]);
});

test("Entra ID's manager given by its id alone is kept as manager.value, whatever the operation's form, and in a POST", async () => {
  const enterprise = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
  const bare: ScimUserView = { ...alice, attributes: {} };
  const managerAfter = async (operation: unknown) =>
    (await patchUser(bare, { schemas: [PATCH], Operations: [operation] }, 'https://x/Users/u-1')).attributes[
      enterprise
    ];
  for (const operation of [
    { op: 'Add', path: `${enterprise}:manager`, value: 'm-1' },
    { op: 'Replace', path: `${enterprise.toUpperCase()}:Manager`, value: 'm-1' },
    { op: 'Replace', path: enterprise, value: { manager: 'm-1' } },
    { op: 'Replace', value: { [`${enterprise}:manager`]: 'm-1' } },
    { op: 'Replace', value: { [enterprise]: { Manager: 'm-1' } } },
    { op: 'Add', path: `${enterprise}:manager`, value: { value: 'm-1' } },
  ])
    assert.deepEqual(await managerAfter(operation), { manager: { value: 'm-1' } }, JSON.stringify(operation));
  const read = readUser({ userName: 'alice', [enterprise.toLowerCase()]: { manager: 'm-1', department: 'Research' } });
  assert.deepEqual(read.attributes[enterprise], { manager: { value: 'm-1' }, department: 'Research' });
});

test('PATCH attribute names are read without regard to case, also URN-qualified core names and the keys of a value without a path', async () => {
  const user = 'urn:ietf:params:scim:schemas:core:2.0:User';
  const patchedUser = (operation: unknown) =>
    patchUser(alice, { schemas: [PATCH], Operations: [operation] }, 'https://x/Users/u-1');
  const disabling: unknown[] = [
    { op: 'replace', path: 'Active', value: false },
    { op: 'Replace', path: 'ACTIVE', value: 'False' },
    { op: 'Replace', path: `${user}:active`, value: 'False' },
    { op: 'replace', value: { Active: false } },
    { op: 'replace', value: { [`${user}:active`]: 'false' } },
  ];
  for (const operation of disabling)
    assert.equal((await patchedUser(operation)).active, false, JSON.stringify(operation));
  assert.equal((await patchedUser({ op: 'replace', path: 'USERNAME', value: 'alice' })).userName, 'alice');
  assert.deepEqual(
    (await patchedUser({ op: 'add', path: `${user}:Name.GivenName`, value: 'Alice' })).attributes['name'],
    { givenName: 'Alice' },
  );
  assert.deepEqual(
    (await patchedUser({ op: 'replace', value: { DisplayName: 'A.', NAME: { FamilyName: 'Smith' } } })).attributes,
    { ...alice.attributes, displayName: 'A.', name: { familyName: 'Smith' } },
  );
  for (const operation of [
    { op: 'replace', path: 'nickName2', value: 'x' },
    { op: 'replace', value: { nickName2: 'x' } },
    { op: 'replace', path: 'urn:example:unknown:User:active', value: false },
  ])
    await assert.rejects(
      patchedUser(operation),
      (error: unknown) => error instanceof ScimProblem && error.status === 400 && error.scimType === 'invalidPath',
      JSON.stringify(operation),
    );

  const group: ScimGroupView = {
    id: 'g-1',
    displayName: 'Staff',
    externalId: null,
    members: [{ value: 'u-1', display: 'alice' }],
    created: '2026-03-02T09:00:00+00:00',
    lastModified: '2026-03-02T09:00:00+00:00',
  };
  const groupUrn = 'urn:ietf:params:scim:schemas:core:2.0:Group';
  const patchedGroup = (...operations: unknown[]) =>
    patchGroup(group, { schemas: [PATCH], Operations: operations }, 'https://x/Groups/g-1');
  assert.deepEqual((await patchedGroup({ op: 'Add', path: 'Members', value: [{ Value: 'u-2' }] })).memberIds, [
    'u-1',
    'u-2',
  ]);
  assert.deepEqual(
    (await patchedGroup({ op: 'Add', path: `${groupUrn}:members`, value: [{ value: 'u-2' }] })).memberIds,
    ['u-1', 'u-2'],
  );
  assert.deepEqual((await patchedGroup({ op: 'Remove', path: `${groupUrn}:members[value eq "u-1"]` })).memberIds, []);
  assert.deepEqual(
    await patchedGroup({
      op: 'Replace',
      value: { [`${groupUrn}:displayName`]: 'Everyone', MEMBERS: [{ value: 'u-3' }] },
    }),
    { displayName: 'Everyone', externalId: null, memberIds: ['u-3'] },
  );
  assert.equal((await patchedGroup({ op: 'replace', path: 'DISPLAYNAME', value: 'All' })).displayName, 'All');
});

test('a POST or PUT names its attributes as a PATCH value does: in any case, a core name also URN-qualified, also in the enterprise extension', () => {
  const user = 'urn:ietf:params:scim:schemas:core:2.0:User';
  const enterprise = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
  assert.equal(readUser({ schemas: [user], userName: 'ann', [`${user}:active`]: false }).active, false);
  assert.deepEqual(
    readUser({
      schemas: [user, enterprise],
      USERNAME: 'ann',
      [`${user.toUpperCase()}:ExternalID`]: 'a-7',
      Active: 'False',
      DisplayName: 'Ann',
      [`${user}:Name`]: { GivenName: 'Ann' },
      [`${user}:emails`]: [{ Value: 'ann@example.org', Primary: 'True' }],
      [enterprise.toUpperCase()]: { Department: 'Research', Manager: 'm-1' },
      [`${enterprise}:EmployeeNumber`]: '7',
    }),
    {
      userName: 'ann',
      externalId: 'a-7',
      active: false,
      attributes: {
        displayName: 'Ann',
        name: { givenName: 'Ann' },
        emails: [{ value: 'ann@example.org', primary: true }],
        [enterprise]: { department: 'Research', manager: { value: 'm-1' }, employeeNumber: '7' },
      },
    },
  );
  assert.deepEqual(readUser({ userName: 'ann', [`${enterprise}:manager`]: 'm-2' }).attributes[enterprise], {
    manager: { value: 'm-2' },
  });
  const group = 'urn:ietf:params:scim:schemas:core:2.0:Group';
  assert.deepEqual(
    readGroup({
      schemas: [group],
      [`${group}:displayName`]: 'Staff',
      EXTERNALID: 'g-1',
      [`${group}:members`]: [{ Value: 'u-1' }],
    }),
    { displayName: 'Staff', externalId: 'g-1', memberIds: ['u-1'] },
  );
});

test('one attribute a POST, PUT or PATCH value gives twice with two values, in two spellings, is refused with invalidSyntax; with one value it is read once', async () => {
  const user = 'urn:ietf:params:scim:schemas:core:2.0:User';
  const enterprise = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
  const group = 'urn:ietf:params:scim:schemas:core:2.0:Group';
  const givenTwice = (error: unknown) =>
    error instanceof ScimProblem &&
    error.status === 400 &&
    error.scimType === 'invalidSyntax' &&
    /is given twice with different values/.test(error.message);
  for (const body of [
    { userName: 'ann', active: true, [`${user}:active`]: false },
    { userName: 'ann', [`${user}:active`]: false, ACTIVE: true },
    { userName: 'ann', USERNAME: 'bob' },
    { userName: 'ann', displayName: 'Ann', DisplayName: 'Bob' },
    { userName: 'ann', name: { givenName: 'Ann', GIVENNAME: 'Bob' } },
    { userName: 'ann', emails: [{ value: 'a@example.org', Value: 'b@example.org' }] },
    { userName: 'ann', [enterprise]: { department: 'Research', Department: 'Physics' } },
    { userName: 'ann', [enterprise]: { department: 'Research' }, [`${enterprise}:department`]: 'Physics' },
  ])
    assert.throws(() => readUser(body), givenTwice, JSON.stringify(body));
  for (const body of [
    { displayName: 'Staff', DISPLAYNAME: 'Guests' },
    { displayName: 'Staff', members: [{ value: 'u-1' }], [`${group}:members`]: [] },
  ])
    assert.throws(() => readGroup(body), givenTwice, JSON.stringify(body));
  await assert.rejects(
    patchUser(
      alice,
      { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: true, [`${user}:active`]: false } }] },
      'https://x/Users/u-1',
    ),
    givenTwice,
  );

  assert.equal(readUser({ userName: 'ann', active: false, [`${user}:Active`]: false }).active, false);
  assert.deepEqual(
    readGroup({ displayName: 'Staff', DisplayName: 'Staff', members: [{ value: 'u-1' }], Members: [{ value: 'u-1' }] }),
    { displayName: 'Staff', externalId: null, memberIds: ['u-1'] },
  );
});

test("a PatchOp message's own names are read in any case: schemas, Operations, and each operation's op, path and value", async () => {
  const disabled = await patchUser(
    alice,
    { SCHEMAS: [PATCH], operations: [{ OP: 'Replace', Path: 'active', VALUE: 'False' }] },
    'https://x/Users/u-1',
  );
  assert.equal(disabled.active, false);
  const group: ScimGroupView = {
    id: 'g-1',
    displayName: 'Staff',
    externalId: null,
    members: [{ value: 'u-1', display: 'alice' }],
    created: '2026-03-02T09:00:00+00:00',
    lastModified: '2026-03-02T09:00:00+00:00',
  };
  const patched = await patchGroup(
    group,
    {
      Schemas: [PATCH],
      OPERATIONS: [
        { Op: 'add', PATH: 'members', Value: [{ value: 'u-2' }] },
        { oP: 'replace', pAtH: 'displayName', vALUE: 'All staff' },
      ],
    },
    'https://x/Groups/g-1',
  );
  assert.deepEqual(patched, { displayName: 'All staff', externalId: null, memberIds: ['u-1', 'u-2'] });
  // One name sent twice, in two spellings, is not guessed between.
  for (const body of [
    { schemas: [PATCH], Operations: [{ op: 'remove', path: 'members' }], operations: [] },
    { schemas: [PATCH], Operations: [{ op: 'remove', path: 'members', Path: 'displayName' }] },
  ])
    await assert.rejects(
      patchGroup(group, body, 'https://x/Groups/g-1'),
      (error: unknown) => error instanceof ScimProblem && error.status === 400 && error.scimType === 'invalidSyntax',
      JSON.stringify(body),
    );
});

test("a filter's attribute is named bare or qualified by its resource's core schema URN, in any case; an extension's or an unknown URN is invalidFilter", () => {
  const user = 'urn:ietf:params:scim:schemas:core:2.0:User';
  const attributeOf = (filter: string, filterable = USER_FILTERABLE) =>
    readListQuery({ filter }, filterable).filter?.attribute;
  assert.equal(attributeOf(`${user}:userName eq "alice"`), 'userName');
  assert.equal(attributeOf(`${user.toUpperCase()}:ExternalId eq "a-1"`), 'externalId');
  assert.equal(
    attributeOf('urn:ietf:params:scim:schemas:core:2.0:Group:DISPLAYNAME eq "Staff"', GROUP_FILTERABLE),
    'displayName',
  );
  for (const [filter, filterable, detail] of [
    ['urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber eq "7"', USER_FILTERABLE, /only/],
    [`${user}:displayName eq "x"`, USER_FILTERABLE, /only/],
    [`${user}:userName eq "alice"`, GROUP_FILTERABLE, /no schema of this resource/],
    ['urn:example:unknown:User:userName eq "alice"', USER_FILTERABLE, /no schema of this resource/],
    [`${user}userName eq "alice"`, USER_FILTERABLE, /no schema of this resource/],
  ] as const)
    assert.throws(
      () => readListQuery({ filter }, filterable),
      (error: unknown) =>
        error instanceof ScimProblem &&
        error.status === 400 &&
        error.scimType === 'invalidFilter' &&
        detail.test(error.message),
      filter,
    );
});

test("a filter's value is a JSON string: its escapes are decoded, and one that is not well-formed is invalidFilter", () => {
  const filteredValue = (filter: string) => readListQuery({ filter }, USER_FILTERABLE).filter?.value;
  assert.equal(filteredValue('userName eq "o\\"brien"'), 'o"brien');
  assert.equal(filteredValue('userName eq "dom\\\\alice"'), 'dom\\alice');
  assert.equal(filteredValue('userName eq "caf\\u00e9 \\/ \\t"'), 'café / \t');
  assert.equal(filteredValue('  username  EQ  "a b"  '), 'a b');
  for (const filter of ['userName eq "a\\qb"', 'userName eq "a\\"', 'userName eq "\\u00e"', 'userName eq "a"b"'])
    assert.throws(
      () => readListQuery({ filter }, USER_FILTERABLE),
      (error: unknown) => error instanceof ScimProblem && error.status === 400 && error.scimType === 'invalidFilter',
      filter,
    );
});

test('a group is read with its members by id, each once and in any case, and holds at most 100,000', () => {
  assert.deepEqual(
    readGroup({
      DisplayName: 'Staff',
      Members: [{ Value: 'u-1', Display: 'alice' }, { value: 'u-2' }, { value: 'u-1' }],
    }),
    { displayName: 'Staff', externalId: null, memberIds: ['u-1', 'u-2'] },
  );
  assert.deepEqual(readGroup({ displayName: 'Nobody' }).memberIds, []);
  const many = (count: number) => Array.from({ length: count }, (_, index) => ({ value: `u-${index}` }));
  assert.equal(readGroup({ displayName: 'All', members: many(MAX_GROUP_MEMBERS) }).memberIds.length, 100_000);
  for (const members of [many(MAX_GROUP_MEMBERS + 1), [{ display: 'x' }], { value: 'u-1' }])
    assert.throws(
      () => readGroup({ displayName: 'All', members }),
      (error: unknown) => error instanceof ScimProblem && error.status === 400 && error.scimType === 'invalidValue',
    );
});

test('a filter is read in time linear in its length: a value of ten times the spaces takes no longer than ten of a tenth, and 16,000 or a million spaces are refused', () => {
  const refuse = (spaces: number) => {
    assert.throws(
      () => readListQuery({ filter: `userName eq "${' '.repeat(spaces)}x` }, USER_FILTERABLE),
      (error: unknown) => error instanceof ScimProblem && error.scimType === 'invalidFilter',
    );
    assert.throws(() => readListQuery({ filter: `userName ${' '.repeat(spaces)}` }, USER_FILTERABLE), ScimProblem);
  };
  // The same number of characters read either way: about the same time when reading is linear,
  // ten times as long when quadratic. Compared with each other, not with a clock budget (speed
  // is the benchmarks' business): the quickest of up to 30 rounds, taken in turn, so that a
  // loaded machine slows both alike; rounds stop once the quickest compare as linear reading
  // does, which quadratic reading never does (ten times as long, in every round).
  const elapsed = (action: () => void) => {
    const started = performance.now();
    action();
    return performance.now() - started;
  };
  // The smaller step first: reading that is quadratic fails there in a second instead of
  // taking minutes over the larger one. Both within the length a filter may have
  // (MAX_LIST_FILTER_CHARACTERS): a longer one is refused before it is read, which is no reading.
  for (const small of [70, 700]) {
    let tenSmall = Number.POSITIVE_INFINITY;
    let large = Number.POSITIVE_INFINITY;
    for (let round = 0; round < 30 && !(large < 4 * tenSmall); round++) {
      tenSmall = Math.min(
        tenSmall,
        elapsed(() => {
          for (let time = 0; time < 10; time++) refuse(small);
        }),
      );
      large = Math.min(
        large,
        elapsed(() => refuse(10 * small)),
      );
    }
    assert.ok(
      large < 4 * tenSmall,
      `${10 * small} spaces took ${large.toFixed(1)} ms, ten times ${small} ${tenSmall.toFixed(1)} ms`,
    );
  }
  for (const spaces of [16_000, 1_000_000]) refuse(spaces);
  assert.deepEqual(readListQuery({ filter: ' \tuserName \n eq\t "a b"  ' }, USER_FILTERABLE).filter, {
    attribute: 'userName',
    value: 'a b',
  });
  assert.throws(
    () => readListQuery({ filter: 'userName eq "a\\u0000b"' }, USER_FILTERABLE),
    (error: unknown) => error instanceof ScimProblem && error.scimType === 'invalidFilter',
  );
});

test('attributes and excludedAttributes name Group attributes in any case, URN-qualified or by a sub-attribute', () => {
  const all = { displayName: true, externalId: true, members: true };
  assert.deepEqual(readGroupAttributes({}), all);
  assert.deepEqual(readGroupAttributes({ excludedAttributes: 'members' }), { ...all, members: false });
  assert.deepEqual(
    readGroupAttributes({ excludedAttributes: 'urn:ietf:params:scim:schemas:core:2.0:Group:Members.value' }),
    {
      ...all,
      members: false,
    },
  );
  assert.deepEqual(readGroupAttributes({ attributes: 'DisplayName, id' }), {
    displayName: true,
    externalId: false,
    members: false,
  });
  assert.throws(() => readGroupAttributes({ attributes: 'members', excludedAttributes: 'members' }), ScimProblem);
});

test('a NUL character anywhere in a body, value or name, is refused; one escaped as text is not', () => {
  assert.doesNotThrow(() => assertStorableText({ displayName: 'a\\u0000b', members: [{ value: 'x' }] }));
  for (const body of [{ displayName: 'a\u0000' }, { members: [{ value: '\u0000' }] }, { ['a\u0000']: 1 }, ['\u0000']])
    assert.throws(
      () => assertStorableText(body),
      (error: unknown) => error instanceof ScimProblem && error.scimType === 'invalidValue',
      JSON.stringify(body),
    );
  assert.doesNotThrow(() => assertStorableText({ displayName: '🙂 \uD83D\uDE42', members: [{ value: 'x' }] }));
  for (const body of [
    { userName: 'a\uD800' },
    { userName: '\uDC00b' },
    { members: [{ value: '\uDE42\uD83D' }] },
    { ['\uD800']: 1 },
  ])
    assert.throws(
      () => assertStorableText(body),
      (error: unknown) =>
        error instanceof ScimProblem && error.scimType === 'invalidValue' && /lone surrogate/.test(error.message),
      JSON.stringify(body),
    );
});

test('a Group list reads a membership check whose values hold "and", quotes and brackets as one group id and one member id', () => {
  const filterOf = (filter: string) => readGroupListQuery({ filter }).filter;
  assert.deepEqual(filterOf('id eq "a and b" and members[value eq "c ] and d"]'), {
    scimId: 'a and b',
    memberId: 'c ] and d',
  });
  assert.deepEqual(filterOf('members.value eq "x\\"y"  \t AND\n id eq "g\\u00e9"'), {
    scimId: 'g\u00e9',
    memberId: 'x"y',
  });
  assert.deepEqual(filterOf('displayName eq "Staff and Guests"'), { displayName: 'Staff and Guests' });
  for (const filter of [
    'id eq "g" and members eq "u" and',
    'id eq "g" and id eq "h"',
    'members eq "u" and members eq "v"',
    `urn:ietf:params:scim:schemas:core:2.0:Group:id eq "g" and members eq "u"`,
    'id eq "g" and members eq "u\\u0000"',
    `id eq "g" and members eq "${'"'.repeat(5000)}`,
  ])
    assert.throws(
      () => filterOf(filter),
      (error: unknown) => error instanceof ScimProblem && error.scimType === 'invalidFilter',
      filter,
    );
});
