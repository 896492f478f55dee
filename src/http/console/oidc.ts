// OpenID Connect sign-in to the admin console (`adminConsole.oidc`): the authorization code
// flow with PKCE, state and nonce, through the maintained client library `openid-client`, which
// checks the provider's answers (issuer, ID token signature, audience, nonce, expiry). Between
// the redirect to the provider and its callback the flow's secrets (PKCE verifier, state, nonce)
// live in a cookie sealed with the portal's answer key, so any portal instance on the same key
// files can finish a flow another began. The provider is asked lazily (first sign-in, and again
// after a failure): a provider that is down or misnamed makes the sign-in page say so, never the
// portal refuse to start — it also serves the Node API, and the VPN must not follow the
// provider down.
import * as client from 'openid-client';
import type { ConsoleOidcSettings } from '../../config/console-oidc.js';
import { grantFromClaims, type OidcGrant } from '../../core/access/index.js';
import { AnswerCipher } from '../../keys/answer-cipher.js';
import type { KeyStore } from '../../keys/key-store.js';
import { AnswerTooLargeError, fetchWithin } from '../../shared/limited-body.js';
import type { Clock } from '../../shared/time.js';

/** How long a browser may take at the provider before the callback is refused. */
export const OIDC_FLOW_LIFETIME_MS = 10 * 60_000;
/** Discovery and token requests give up after this long (seconds): the person is waiting. */
const PROVIDER_TIMEOUT_SECONDS = 10;
/** Authenticated data of the sealed flow cookie: a text sealed for anything else does not open here. */
const FLOW_CONTEXT = 'console-oidc-flow';
/** A discovery document, key set, token or userinfo answer is far smaller than this. */
const MAX_PROVIDER_ANSWER_BYTES = 1024 * 1024;
/** Every request to the provider (discovery, keys, token, userinfo): its answer read against the cap. */
const providerFetch = fetchWithin(MAX_PROVIDER_ANSWER_BYTES, (url) => describeProviderUrl(url));

export type OidcStart =
  | { readonly ok: true; readonly url: URL; readonly flow: string }
  | { readonly ok: false; readonly reason: string };

/**
 * A finished flow: a grant, or a refusal with one line for the person (`reason`) and the
 * subject when the provider named one (for the audit row).
 */
export type OidcFinish =
  | { readonly ok: true; readonly grant: OidcGrant }
  | { readonly ok: false; readonly subject: string | null; readonly reason: string };

interface SealedFlow {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
  readonly startedAt: number;
}

export class ConsoleOidc {
  #configuration: Promise<client.Configuration> | null = null;

  constructor(
    readonly settings: ConsoleOidcSettings,
    private readonly keys: KeyStore,
    private readonly clock: Clock,
  ) {}

  /** What the sign-in button says. */
  get buttonLabel(): string {
    return `Sign in with ${this.settings.name}`;
  }

  /** The provider's metadata, asked once; a failed attempt is forgotten so the next sign-in asks again. */
  provider(): Promise<client.Configuration> {
    if (this.#configuration === null) {
      const { issuer, clientId, clientSecret } = this.settings;
      const attempt = client.discovery(issuer, clientId, undefined, client.ClientSecretBasic(clientSecret.reveal()), {
        timeout: PROVIDER_TIMEOUT_SECONDS,
        // The configuration keeps it for every later request (keys, token, userinfo).
        [client.customFetch]: providerFetch,
        // The ID token's signature, checked against the provider's published keys: the library
        // checks only its claims by default, trusting the TLS of the token endpoint.
        // http:// issuers pass the configuration check only on a loopback address (tests).
        execute: [
          client.enableNonRepudiationChecks,
          ...(issuer.protocol === 'http:' ? [client.allowInsecureRequests] : []),
        ],
      });
      this.#configuration = attempt;
      attempt.catch(() => {
        if (this.#configuration === attempt) this.#configuration = null;
      });
    }
    return this.#configuration;
  }

  /** Where to send the browser, and the sealed flow to keep in its cookie until the callback. */
  async begin(): Promise<OidcStart> {
    let configuration: client.Configuration;
    try {
      configuration = await this.provider();
    } catch (error) {
      return {
        ok: false,
        reason: `${this.settings.name} cannot be reached (${describe(error)}); sign in with an admin key.`,
      };
    }
    const flow: SealedFlow = {
      state: client.randomState(),
      nonce: client.randomNonce(),
      verifier: client.randomPKCECodeVerifier(),
      startedAt: this.clock.now().getTime(),
    };
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: this.settings.redirectUri.href,
      scope: this.settings.requestScopes.join(' '),
      code_challenge: await client.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: 'S256',
      state: flow.state,
      nonce: flow.nonce,
    });
    return { ok: true, url, flow: this.#cipher().seal(JSON.stringify(flow), FLOW_CONTEXT) };
  }

  /**
   * Where to send the browser to end the person's session at the provider too (RP-initiated
   * logout), back to the sign-in page after; null when the provider offers no such endpoint or
   * cannot be reached (the console's session has ended either way). Without an ID token to hint
   * with, the provider may ask the person to confirm.
   */
  async endSessionUrl(): Promise<URL | null> {
    try {
      const configuration = await this.provider();
      if (configuration.serverMetadata().end_session_endpoint === undefined) return null;
      return client.buildEndSessionUrl(configuration, {
        client_id: this.settings.clientId,
        post_logout_redirect_uri: this.settings.postLogoutRedirectUri.href,
      });
    } catch {
      return null;
    }
  }

  /**
   * The provider's callback: `query` is the callback's query string as received (its origin is
   * the configured redirect URI's, never the request's Host header). The library exchanges the
   * code and checks state, issuer, PKCE and the ID token; userinfo adds the claims a provider
   * keeps out of the ID token.
   */
  async finish(query: string, sealedFlow: string | undefined): Promise<OidcFinish> {
    const flow = this.#openFlow(sealedFlow);
    if (typeof flow === 'string') return { ok: false, subject: null, reason: flow };
    let claims: Record<string, unknown>;
    try {
      const configuration = await this.provider();
      const callbackUrl = new URL(this.settings.redirectUri);
      callbackUrl.search = query;
      const tokens = await client.authorizationCodeGrant(configuration, callbackUrl, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
      const idToken = tokens.claims();
      if (idToken === undefined)
        return { ok: false, subject: null, reason: `${this.settings.name} answered without an ID token.` };
      const userInfo = await client.fetchUserInfo(configuration, tokens.access_token, idToken.sub);
      claims = { ...userInfo, ...idToken };
    } catch (error) {
      return { ok: false, subject: null, reason: `${this.settings.name} sign-in failed: ${describe(error)}.` };
    }
    const result = grantFromClaims(claims, this.settings);
    if (result.ok) return result;
    return {
      ok: false,
      subject: result.subject,
      reason: `${this.settings.name} account "${result.subject}" may not use the console: ${result.reason}.`,
    };
  }

  #openFlow(sealed: string | undefined): SealedFlow | string {
    const expired = 'The sign-in took too long or was started in another browser; start it again.';
    if (sealed === undefined) return expired;
    const text = this.#cipher().open(sealed, FLOW_CONTEXT);
    if (text === null) return expired;
    const flow = JSON.parse(text) as SealedFlow;
    if (this.clock.now().getTime() - flow.startedAt > OIDC_FLOW_LIFETIME_MS) return expired;
    return flow;
  }

  #cipher(): AnswerCipher {
    // The answer key (generate-secrets makes it; made here when it did not), under its own context.
    if (this.keys.answerKey() === null) this.keys.createAnswerKey();
    const key = this.keys.answerKey();
    if (key === null) throw new Error(`${this.keys.answerKeyPath} is not 64 hex characters`);
    return new AnswerCipher(key);
  }
}

/** One line from the library's or the provider's error; it never holds the client secret. */
function describe(error: unknown): string {
  // The library wraps a failed read ("failed to parse body as JSON"); the cap is the reason.
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof AnswerTooLargeError) return cause.message;
  }
  if (error instanceof client.AuthorizationResponseError || error instanceof client.ResponseBodyError) {
    return error.error_description === undefined ? error.error : `${error.error}: ${error.error_description}`;
  }
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}

/** A provider URL for messages: without its query. */
function describeProviderUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return 'the provider';
  }
}
