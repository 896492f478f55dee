// `adminConsole.oidc`: single sign-on to the admin console through an OpenID provider, so a
// team signs in with the accounts it already has instead of sharing admin keys. What can be checked without the provider is checked when the configuration loads
// (the issuer's URL, the client secret file and its mode, the claim mapping, the profiles it
// names), so a typo refuses the start naming the option; the provider itself is asked lazily
// (src/http/console/oidc.ts), so an outage of it never keeps the portal, and the VPN, down.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { Secret } from '../shared/secret.js';
import { looseSecretFile } from './secret-files.js';

const claimValues = z.array(z.string().min(1)).default([]);
/** A claim's name; a dotted path reaches into an object claim (Keycloak's `realm_access.roles`). */
const claimName = z.string().regex(/^[^.\s]+(\.[^.\s]+)*$/, 'a claim name, or a dotted path into an object claim');

export const consoleOidcSchema = z
  .strictObject({
    issuer: z.url().meta({
      description:
        "The OpenID provider's issuer URL, exactly as its `/.well-known/openid-configuration` names it (`https://`; `http://` on a loopback address only, for tests). Single sign-on to the console is off without `adminConsole.oidc`; the redirect URI to register is `{baseUrl}admin/oidc/callback`.",
      see: 'console.md#openid-connect-sign-in',
    }),
    name: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe('What the sign-in button calls the provider ("Sign in with …"); the issuer\'s host name by default.'),
    clientId: z.string().min(1).describe("The console's client id at the provider (a confidential client, code flow)."),
    clientSecretFile: z
      .string()
      .min(1)
      .describe(
        "File holding the client secret (a relative path is taken from the configuration file's folder); mode 0600 or stricter, or the portal refuses to start.",
      ),
    requestScopes: z
      .array(z.string().min(1))
      .default(['openid', 'profile'])
      .describe(
        'OAuth scopes asked for at the provider (`openid` is always added); add what makes it send the claims below (`roles`, `groups`, …).',
      ),
    signOutAtProvider: z
      .boolean()
      .default(false)
      .describe(
        "Whether *Sign out* of a session begun here also ends the person's session at the provider (RP-initiated logout: the browser goes to the provider's `end_session_endpoint`, then back to the sign-in page; register `{baseUrl}admin/sign-in` as the client's post-logout redirect URI). Off by default: the provider's session is the person's other applications' too.",
      ),
    scope: z
      .strictObject({
        claim: claimName.describe(
          'The claim (ID token or userinfo) whose values grant a scope: a string or an array of strings.',
        ),
        read: claimValues.describe('Values of `claim` that grant scope `read`.'),
        write: claimValues.describe('Values of `claim` that grant scope `write`.'),
        admin: claimValues.describe('Values of `claim` that grant scope `admin`.'),
      })
      .describe(
        'Which claim values grant which console scope; the widest granted wins, and a user granted none is refused.',
      ),
    profiles: z
      .strictObject({
        claim: claimName.describe('The claim whose values limit the session to profiles.'),
        values: z
          .record(z.string().min(1), z.array(z.string().min(1)).min(1))
          .optional()
          .describe(
            "A claim value → the profile ids it grants; without it, the claim's values are the profile ids themselves.",
          ),
      })
      .optional()
      .describe(
        'Limits an OpenID session to profiles, as a key limited to profiles; without it, an OpenID session may touch every profile.',
      ),
  })
  .optional()
  .describe('OpenID Connect single sign-on to the admin console (authorization code flow with PKCE); off when absent.');

export type ParsedConsoleOidc = z.output<typeof consoleOidcSchema>;

/** `adminConsole.oidc` resolved: the secret read, the redirect URI derived from baseUrl. */
export interface ConsoleOidcSettings {
  readonly issuer: URL;
  readonly name: string;
  readonly clientId: string;
  readonly clientSecret: Secret;
  readonly redirectUri: URL;
  /** Where the provider sends the browser after signing out at it: the console's sign-in page. */
  readonly postLogoutRedirectUri: URL;
  readonly signOutAtProvider: boolean;
  readonly requestScopes: readonly string[];
  readonly scope: OidcScopeMapping;
  /** null: an OpenID session has no profile limit. */
  readonly profiles: OidcProfilesMapping | null;
}

export interface OidcScopeMapping {
  readonly claim: string;
  readonly read: readonly string[];
  readonly write: readonly string[];
  readonly admin: readonly string[];
}

export interface OidcProfilesMapping {
  readonly claim: string;
  /** null: the claim's values are profile ids. */
  readonly values: Readonly<Record<string, readonly string[]>> | null;
}

type Report = (option: string, message: string) => void;

const OPTION = 'adminConsole.oidc';
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The redirect URI the provider must know: the console's callback under baseUrl. */
export function oidcRedirectUri(baseUrl: URL): URL {
  return new URL('admin/oidc/callback', baseUrl.href.endsWith('/') ? baseUrl : `${baseUrl.href}/`);
}

/** The post-logout redirect URI the provider must know (signOutAtProvider): the console's sign-in page. */
export function oidcPostLogoutRedirectUri(baseUrl: URL): URL {
  return new URL('admin/sign-in', baseUrl.href.endsWith('/') ? baseUrl : `${baseUrl.href}/`);
}

/** null when the option is absent; problems go to `report` (then the value returned does not matter). */
export function resolveConsoleOidc(
  raw: ParsedConsoleOidc,
  baseUrl: URL,
  baseDir: string,
  profileIds: readonly string[],
  report: Report,
): ConsoleOidcSettings | null {
  if (raw === undefined) return null;
  const issuer = new URL(raw.issuer);
  if (issuer.protocol !== 'https:' && !(issuer.protocol === 'http:' && LOOPBACK_HOSTS.has(issuer.hostname))) {
    report(`${OPTION}.issuer`, `${raw.issuer} must be https:// (http:// only on a loopback address)`);
  }
  if (issuer.search !== '' || issuer.hash !== '') report(`${OPTION}.issuer`, 'an issuer has no query or fragment');
  const clientSecret = readClientSecret(path.resolve(baseDir, raw.clientSecretFile), raw.clientSecretFile, report);
  const { claim, read, write, admin } = raw.scope;
  if (read.length + write.length + admin.length === 0)
    report(`${OPTION}.scope`, 'no value grants any scope: list values under read, write or admin');
  const known = new Set(profileIds);
  const values = raw.profiles?.values ?? null;
  if (values !== null) {
    for (const [value, ids] of Object.entries(values)) {
      for (const id of ids)
        if (!known.has(id)) report(`${OPTION}.profiles.values.${value}`, `"${id}" is not a profile of ProfileList`);
    }
  }
  return {
    issuer,
    name: raw.name ?? issuer.hostname,
    clientId: raw.clientId,
    clientSecret: clientSecret ?? new Secret(''),
    redirectUri: oidcRedirectUri(baseUrl),
    postLogoutRedirectUri: oidcPostLogoutRedirectUri(baseUrl),
    signOutAtProvider: raw.signOutAtProvider,
    requestScopes: ['openid', ...raw.requestScopes.filter((scope) => scope !== 'openid')],
    scope: { claim, read, write, admin },
    profiles: raw.profiles === undefined ? null : { claim: raw.profiles.claim, values },
  };
}

/** Never quotes the file's content. */
function readClientSecret(file: string, given: string, report: Report): Secret | null {
  const option = `${OPTION}.clientSecretFile`;
  try {
    // The client secret alone refuses the start when others may read it (the rule: secret-files.ts).
    const loose = looseSecretFile(file);
    if (loose !== null) {
      report(option, `${given} ${loose}`);
      return null;
    }
    const secret = readFileSync(file, 'utf8').trim();
    if (secret === '') {
      report(option, `${given} is empty`);
      return null;
    }
    return new Secret(secret);
  } catch (error) {
    report(option, `cannot read ${given} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    return null;
  }
}
