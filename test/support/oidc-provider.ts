// A real OpenID provider for the console's single sign-on tests: `oidc-provider` (a maintained,
// certified implementation) on a loopback port, with one confidential client and accounts whose
// claims the tests choose. Its own login and consent pages (the package's development
// interactions: any password) are driven by a browser or by `signInAtProvider` below, an HTTP
// client that fills the provider's forms as a person would.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface TestOidcProvider {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /**
   * While set, the token endpoint's ID tokens reach the client with one character of their
   * signature changed: what a forger without the provider's key can give.
   */
  forgeIdTokens: boolean;
  close(): Promise<void>;
}

export interface OidcProviderOptions {
  readonly redirectUri: string;
  /** Where the client may have the browser sent after signing out at the provider. */
  readonly postLogoutRedirectUri?: string;
  /** Login name → the claims of that account (besides `sub`, which is the login). */
  readonly accounts: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

export async function startOidcProvider(options: OidcProviderOptions): Promise<TestOidcProvider> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'vpn-portal-console';
  const clientSecret = 'test-client-secret-of-some-length-0123456789';
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [options.redirectUri],
        ...(options.postLogoutRedirectUri === undefined
          ? {}
          : { post_logout_redirect_uris: [options.postLogoutRedirectUri] }),
        response_types: ['code'],
        grant_types: ['authorization_code'],
      },
    ],
    // Claims named by the scopes that ask for them; `roles` and `groups` as Entra and Keycloak send them.
    claims: { openid: ['sub'], profile: ['name'], roles: ['roles', 'realm_access'], groups: ['groups'] },
    findAccount: (_ctx, id) => {
      const claims = options.accounts[id];
      if (claims === undefined) return undefined;
      return { accountId: id, claims: () => ({ sub: id, ...claims }) };
    },
    cookies: { keys: ['test-cookie-key-0123456789abcdef'] },
    pkce: { required: () => true },
  });
  // The development interactions warn once on the console; these tests mean to use them.
  provider.on('server_error', (_ctx, error) => console.error('oidc-provider:', error));
  const handle = provider.callback();
  const self: TestOidcProvider = {
    issuer,
    clientId,
    clientSecret,
    forgeIdTokens: false,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (self.forgeIdTokens && request.url?.startsWith('/token')) {
      // The same length, so the Content-Length the provider set still holds.
      const end = response.end.bind(response) as (chunk: unknown) => ServerResponse;
      response.end = ((chunk: unknown) =>
        end(
          typeof chunk === 'string' || Buffer.isBuffer(chunk)
            ? chunk
                .toString()
                .replace(
                  /("id_token":"[^".]+\.[^".]+\.)(.)/,
                  (_whole, head: string, first: string) => `${head}${first === 'A' ? 'B' : 'A'}`,
                )
            : chunk,
        )) as typeof response.end;
    }
    void handle(request, response);
  });
  return self;
}

/**
 * Follows `authorizationUrl` through the provider's login and consent forms as `login` and
 * returns the URL the provider sends the browser back to (the callback, not fetched).
 */
export async function signInAtProvider(authorizationUrl: URL, login: string, stopAt: string): Promise<URL> {
  const jar = new Map<string, string>();
  let url = authorizationUrl;
  let method = 'GET';
  let body: URLSearchParams | undefined;
  for (let step = 0; step < 20; step += 1) {
    if (url.href.startsWith(stopAt)) return url;
    const response = await fetch(url, {
      method,
      redirect: 'manual',
      headers: {
        cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; '),
        ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
      },
      ...(body === undefined ? {} : { body }),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
    const location = response.headers.get('location');
    if (location !== null) {
      url = new URL(location, url);
      method = 'GET';
      body = undefined;
      continue;
    }
    const page = await response.text();
    const form = /<form[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/.exec(page);
    if (form === null)
      throw new Error(`the provider answered ${response.status} without a form or a redirect: ${page.slice(0, 300)}`);
    const fields = new URLSearchParams();
    for (const input of (form[2] ?? '').matchAll(/<input[^>]*name="([^"]+)"[^>]*>/g)) {
      const name = input[1] ?? '';
      const value = /value="([^"]*)"/.exec(input[0])?.[1];
      fields.set(name, name === 'login' ? login : name === 'password' ? 'any password' : (value ?? ''));
    }
    url = new URL(form[1] ?? '', url);
    method = 'POST';
    body = fields;
  }
  throw new Error('the provider did not send the browser back within 20 steps');
}
