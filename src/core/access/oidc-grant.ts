// What an OpenID Connect sign-in to the console may do, from the claims the provider vouched
// for (`adminConsole.oidc.scope`, `.profiles`): the widest scope any claim value grants, and the
// profiles the session is limited to. Pure, so the rules are tested without a provider; the
// protocol itself (discovery, the code flow, checking the ID token) is src/http/console/oidc.ts.
import type { OidcProfilesMapping, OidcScopeMapping } from '../../config/console-oidc.js';
import { ADMIN_SCOPES, type AdminScope } from '../../protocol/admin-api.js';
import { asProfileId, type ProfileId } from '../../shared/ids.js';

export { OIDC_CALLER_PREFIX } from '../admin-call.js';
const MAX_SUBJECT_LENGTH = 255;

export interface OidcGrant {
  /** The provider's `sub`: stable, unlike a name or an e-mail address. */
  readonly subject: string;
  readonly scope: AdminScope;
  /** null: every profile. */
  readonly profiles: readonly ProfileId[] | null;
}

export type OidcGrantResult =
  | { readonly ok: true; readonly grant: OidcGrant }
  | { readonly ok: false; readonly subject: string; readonly reason: string };

export interface OidcGrantRules {
  readonly scope: OidcScopeMapping;
  readonly profiles: OidcProfilesMapping | null;
}

/** `claims` are the ID token's merged with userinfo's (same `sub`, checked by the caller). */
export function grantFromClaims(claims: Readonly<Record<string, unknown>>, rules: OidcGrantRules): OidcGrantResult {
  const subject = typeof claims['sub'] === 'string' ? claims['sub'] : '';
  if (subject === '') return { ok: false, subject, reason: 'the provider named no subject (sub)' };
  // OpenID Connect Core §2 allows 255 ASCII characters; the session row and the audit log keep no more.
  if (subject.length > MAX_SUBJECT_LENGTH)
    return {
      ok: false,
      subject: subject.slice(0, MAX_SUBJECT_LENGTH),
      reason: `the provider's subject is longer than ${MAX_SUBJECT_LENGTH} characters`,
    };
  const held = new Set(claimStrings(claims, rules.scope.claim));
  // The widest scope wins: ADMIN_SCOPES runs from narrowest to widest.
  const scope = [...ADMIN_SCOPES]
    .reverse()
    .find((candidate) => rules.scope[candidate].some((value) => held.has(value)));
  if (scope === undefined) {
    const shown = held.size === 0 ? 'no claim' : 'no value of claim';
    return { ok: false, subject, reason: `${shown} "${rules.scope.claim}" grants a console scope` };
  }
  if (rules.profiles === null) return { ok: true, grant: { subject, scope, profiles: null } };
  const values = claimStrings(claims, rules.profiles.claim);
  const mapped = rules.profiles.values;
  // Own keys only: a value named like an object's inherited property (constructor) maps to nothing.
  const profilesOf = (value: string) => (mapped !== null && Object.hasOwn(mapped, value) ? (mapped[value] ?? []) : []);
  const profiles = [...new Set(mapped === null ? values : values.flatMap(profilesOf))].sort();
  if (profiles.length === 0)
    return { ok: false, subject, reason: `no value of claim "${rules.profiles.claim}" grants a profile` };
  return { ok: true, grant: { subject, scope, profiles: profiles.map(asProfileId) } };
}

/** The strings a claim holds: a string, or the strings of an array; a dotted name reaches into objects. */
function claimStrings(claims: Readonly<Record<string, unknown>>, name: string): string[] {
  let value: unknown = claims;
  for (const part of name.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, part)) return [];
    value = (value as Record<string, unknown>)[part];
  }
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string');
  return [];
}
