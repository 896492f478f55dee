// The rules that turn an OpenID provider's claims into a console scope and profile limit:
// the widest granted scope wins, strings and arrays both count, a dotted name reaches into an
// object claim, and an account granted nothing is refused saying which claim.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { grantFromClaims, type OidcGrantRules } from '../../../src/core/access/index.js';

const rules: OidcGrantRules = {
  scope: { claim: 'roles', read: ['viewer'], write: ['operator'], admin: ['root', 'owner'] },
  profiles: null,
};

test('the widest scope a claim value grants wins, from a string or an array', () => {
  assert.deepEqual(grantFromClaims({ sub: 'u1', roles: ['viewer', 'owner', 'operator'] }, rules), {
    ok: true,
    grant: { subject: 'u1', scope: 'admin', profiles: null },
  });
  assert.deepEqual(grantFromClaims({ sub: 'u2', roles: 'viewer' }, rules), {
    ok: true,
    grant: { subject: 'u2', scope: 'read', profiles: null },
  });
});

test('values of other types, a missing claim and unknown values grant nothing, and the refusal says which', () => {
  assert.deepEqual(grantFromClaims({ sub: 'u3' }, rules), {
    ok: false,
    subject: 'u3',
    reason: 'no claim "roles" grants a console scope',
  });
  assert.deepEqual(grantFromClaims({ sub: 'u3', roles: [1, { admin: true }, 'guest'] }, rules), {
    ok: false,
    subject: 'u3',
    reason: 'no value of claim "roles" grants a console scope',
  });
  assert.deepEqual(grantFromClaims({ roles: ['root'] }, rules), {
    ok: false,
    subject: '',
    reason: 'the provider named no subject (sub)',
  });
  const long = grantFromClaims({ sub: 's'.repeat(256), roles: ['root'] }, rules);
  assert.deepEqual(long, {
    ok: false,
    subject: 's'.repeat(255),
    reason: "the provider's subject is longer than 255 characters",
  });
  assert.equal(grantFromClaims({ sub: 's'.repeat(255), roles: ['root'] }, rules).ok, true);
});

test('a dotted claim name reaches into objects and never into inherited properties', () => {
  const nested: OidcGrantRules = { ...rules, scope: { ...rules.scope, claim: 'realm_access.roles' } };
  assert.equal(grantFromClaims({ sub: 'k', realm_access: { roles: ['operator'] } }, nested).ok, true);
  const inherited: OidcGrantRules = { ...rules, scope: { ...rules.scope, claim: 'constructor.name' } };
  assert.equal(
    grantFromClaims({ sub: 'k' }, { ...inherited, scope: { ...inherited.scope, admin: ['Object'] } }).ok,
    false,
  );
});

test('a profiles claim limits the session: its values are profile ids, or mapped to them; none is a refusal', () => {
  const direct: OidcGrantRules = { ...rules, profiles: { claim: 'vpn_profiles', values: null } };
  assert.deepEqual(grantFromClaims({ sub: 'd', roles: 'viewer', vpn_profiles: ['staff', 'guests', 'staff'] }, direct), {
    ok: true,
    grant: { subject: 'd', scope: 'read', profiles: ['guests', 'staff'] },
  });
  const mapped: OidcGrantRules = {
    ...rules,
    profiles: { claim: 'groups', values: { 'it-staff': ['staff', 'admins'], students: ['students'] } },
  };
  assert.deepEqual(grantFromClaims({ sub: 'm', roles: 'operator', groups: ['it-staff', 'choir'] }, mapped), {
    ok: true,
    grant: { subject: 'm', scope: 'write', profiles: ['admins', 'staff'] },
  });
  assert.deepEqual(grantFromClaims({ sub: 'n', roles: 'operator', groups: ['choir'] }, mapped), {
    ok: false,
    subject: 'n',
    reason: 'no value of claim "groups" grants a profile',
  });
  // Values named like an object's inherited properties are not keys of the mapping.
  assert.deepEqual(grantFromClaims({ sub: 'p', roles: 'operator', groups: ['constructor', '__proto__'] }, mapped), {
    ok: false,
    subject: 'p',
    reason: 'no value of claim "groups" grants a profile',
  });
  assert.deepEqual(grantFromClaims({ sub: 'q', roles: 'operator', groups: ['toString', 'students'] }, mapped), {
    ok: true,
    grant: { subject: 'q', scope: 'write', profiles: ['students'] },
  });
});
