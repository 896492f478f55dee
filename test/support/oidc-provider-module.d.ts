// The part of `oidc-provider` (a dev dependency, shipped without type declarations) that the
// single sign-on tests use: enough to keep test/support/oidc-provider.ts type-checked.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface Account {
    readonly accountId: string;
    claims(): Record<string, unknown> | Promise<Record<string, unknown>>;
  }

  interface Configuration {
    readonly clients: readonly Record<string, unknown>[];
    readonly claims?: Record<string, readonly string[]>;
    readonly findAccount?: (ctx: unknown, id: string) => Account | undefined | Promise<Account | undefined>;
    readonly cookies?: { readonly keys: readonly string[] };
    readonly pkce?: { readonly required: () => boolean };
  }

  export default class Provider {
    constructor(issuer: string, configuration: Configuration);
    callback(): (request: IncomingMessage, response: ServerResponse) => void;
    on(event: 'server_error', listener: (ctx: unknown, error: Error) => void): this;
  }
}
