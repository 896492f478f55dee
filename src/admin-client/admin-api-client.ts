// A typed client of the Administrator API: one method per call, its parameters typed by, and its
// answers typed by and checked against, the definitions the portal's routes take theirs from
// (ADMIN_API_CALLS, src/protocol/admin-api.ts). Used by the tests and by the command-line client;
// it needs nothing but fetch.
import type { z } from 'zod';
import {
  ADMIN_API_CALLS,
  ADMIN_API_PREFIX,
  errorAnswer,
  IDEMPOTENCY_KEY_HEADER,
  REVOCATION_HEADER,
  type AnswerOf,
  type AuditLogQuery,
  type AttributionQuery,
  type ConnectionLogQuery,
  type CreateAdminKeyParams,
  type CreateParams,
  type CreateLegalHoldParams,
  type CreateWebhookParams,
  type DevicesQuery,
  type EnrollmentTokenParams,
  type ExtendParams,
  type RegisterDeviceParams,
  type SuspendDeviceParams,
  type RevocationsQuery,
  type StatsQuery,
  type UsersPage,
  type UsersQuery,
  type WebhookDeliveriesQuery,
} from '../protocol/admin-api.js';

/** A call whose answer is JSON: where it is and the schema of what it answers. */
interface JsonCall<A extends z.ZodType> {
  readonly path: string;
  readonly answer: A;
}

export interface AdminApiClientOptions {
  /** The portal's `baseUrl`, e.g. `https://vpn.example.org/vpn-user-portal/`. */
  readonly baseUrl: string | URL;
  /** The Admin API secret or an admin key (`vpa_…`). */
  readonly key: string;
  /** Extra headers on every request (tests: `X-Forwarded-For`). */
  readonly headers?: Readonly<Record<string, string>>;
  /** How long a call may take; default 30 s. */
  readonly timeoutMs?: number;
  /**
   * How long `disable_user`, `delete_connection` and `destroy` may take; default 10 minutes (or
   * `timeoutMs`, when longer): a
   * user with a hundred thousand configurations or more takes longer than 30 s, and a revocation
   * given up by its caller goes on all the same (it would look failed while it succeeded).
   */
  readonly revocationTimeoutMs?: number;
  /** The fetch to send with; default the global one (tests: one that checks every answer). */
  readonly fetch?: typeof fetch;
}

/** What `create` answered: the file and what the headers say about it. */
export interface CreatedConfiguration {
  /** The file as text (UTF-8); for a binary answer see `bytes`. */
  readonly body: string;
  /** The file as sent. */
  readonly bytes: Uint8Array;
  /** True when the file is not text: a signed Apple profile (DER). */
  readonly binary: boolean;
  readonly contentType: string;
  /** The configuration's expiry, from the `Expires` header. */
  readonly expiresAt: Date;
  /** Set for the Apple profile (`Content-Disposition: attachment; filename="…"`). */
  readonly fileName: string | null;
}

/** Options of the calls that change something. */
export interface PostOptions {
  /** Sent as `Idempotency-Key`: a retry with the same key and parameters gets the first answer again. */
  readonly idempotencyKey?: string;
}

/** The portal answered with an error: its status and its `{"error": …}` message. */
export class AdminApiError extends Error {
  override readonly name = 'AdminApiError';

  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_REVOCATION_TIMEOUT_MS = 600_000;

export class AdminApiClient {
  readonly #base: string;
  readonly #options: AdminApiClientOptions;

  constructor(options: AdminApiClientOptions) {
    const base = new URL(options.baseUrl);
    const path = base.pathname.endsWith('/') ? base.pathname : `${base.pathname}/`;
    this.#base = `${base.origin}${path}${ADMIN_API_PREFIX}`;
    this.#options = options;
  }

  async connectedUsers(showAll = false): Promise<AnswerOf<'connectedUsers'>['connected_users']> {
    const answer = await this.#getJson(ADMIN_API_CALLS.connectedUsers, { show_all: showAll ? 'on' : 'off' });
    return answer.connected_users;
  }

  async connectionList(showAll = false): Promise<AnswerOf<'connectionList'>['connection_list']> {
    const answer = await this.#getJson(ADMIN_API_CALLS.connectionList, { show_all: showAll ? 'on' : 'off' });
    return answer.connection_list;
  }

  async users(): Promise<AnswerOf<'users'>['users']> {
    return (await this.#getJson(ADMIN_API_CALLS.users, {})).users;
  }

  async disabledUsers(): Promise<AnswerOf<'disabledUsers'>['disabled_users']> {
    return (await this.#getJson(ADMIN_API_CALLS.disabledUsers, {})).disabled_users;
  }

  /** Extension: one page of the users (or the disabled ones), by prefix; pass `next_cursor` as `cursor` for the next. */
  async usersPage(query: UsersQuery & { readonly disabled?: boolean }): Promise<UsersPage> {
    const { disabled, ...rest } = query;
    // A limit always: without one of the extension's parameters the answer has no next_cursor.
    const sent = definedOnly({ limit: 100, ...rest });
    if (disabled === true) {
      const answer = await this.#getJson(ADMIN_API_CALLS.disabledUsers, sent);
      return {
        users: answer.disabled_users,
        next_cursor: answer.next_cursor ?? null,
        directory_inactive: answer.directory_inactive ?? [],
      };
    }
    const answer = await this.#getJson(ADMIN_API_CALLS.users, sent);
    return {
      users: answer.users,
      next_cursor: answer.next_cursor ?? null,
      directory_inactive: answer.directory_inactive ?? [],
    };
  }

  async userConfigurationList(userId: string): Promise<AnswerOf<'userConfigurationList'>['user_configuration_list']> {
    return (await this.#getJson(ADMIN_API_CALLS.userConfigurationList, { user_id: userId })).user_configuration_list;
  }

  /** `accept`: the media types the caller takes, as an Accept header (default: the portal's choice). */
  async create(params: CreateParams, accept?: string, options: PostOptions = {}): Promise<CreatedConfiguration> {
    const headers = { ...(accept === undefined ? {} : { accept }), ...idempotencyHeader(options) };
    const response = await this.#send('POST', ADMIN_API_CALLS.create.path, formOf(params), headers);
    if (!response.ok) await this.#okText(response);
    const bytes = new Uint8Array(await response.arrayBuffer());
    const disposition = response.headers.get('content-disposition');
    const body = utf8Text(bytes);
    return {
      body: body ?? new TextDecoder().decode(bytes),
      bytes,
      binary: body === null,
      contentType: response.headers.get('content-type') ?? '',
      expiresAt: new Date(response.headers.get('expires') ?? Number.NaN),
      fileName: disposition === null ? null : (/filename="([^"]+)"/.exec(disposition)?.[1] ?? null),
    };
  }

  /** Answers the id of the revocation receipt (the `VPN-Portal-Revocation` header; see `revocation`). */
  destroy(userId: string, options: PostOptions = {}): Promise<string | null> {
    return this.#postRevoking(ADMIN_API_CALLS.destroy.path, { user_id: userId }, options);
  }

  /** Answers the id of the revocation receipt (the `VPN-Portal-Revocation` header; see `revocation`). */
  disableUser(userId: string, options: PostOptions = {}): Promise<string | null> {
    return this.#postRevoking(ADMIN_API_CALLS.disableUser.path, { user_id: userId }, options);
  }

  enableUser(userId: string, options: PostOptions = {}): Promise<void> {
    return this.#postNoContent(ADMIN_API_CALLS.enableUser.path, { user_id: userId }, options);
  }

  /**
   * The connection id is form-encoded here: a public key holds `+` and `/`. Answers the id of
   * the revocation receipt, or null when the user had no such configuration.
   */
  deleteConnection(userId: string, connectionId: string, options: PostOptions = {}): Promise<string | null> {
    return this.#postRevoking(
      ADMIN_API_CALLS.deleteConnection.path,
      { user_id: userId, connection_id: connectionId },
      options,
    );
  }

  /** Extension: a revocation receipt, by the id disable_user, destroy or delete_connection answered. */
  revocation(revocationId: string): Promise<AnswerOf<'revocation'>> {
    return this.#getJson(ADMIN_API_CALLS.revocation, { revocation_id: revocationId });
  }

  /** Extension: revocation receipts, newest first (`state: 'pending'` lists pending and overdue ones). */
  async revocations(query: RevocationsQuery = {}): Promise<AnswerOf<'revocations'>['revocations']> {
    return (await this.#getJson(ADMIN_API_CALLS.revocations, definedOnly(query))).revocations;
  }

  deleteUserAuthorizations(userId: string, options: PostOptions = {}): Promise<void> {
    return this.#postNoContent(ADMIN_API_CALLS.deleteUserAuthorizations.path, { user_id: userId }, options);
  }

  /** One page of the audit log, newest first (needs scope admin); pass `next_cursor` as `cursor` for the next. */
  auditLog(query: AuditLogQuery = {}): Promise<AnswerOf<'auditLog'>> {
    return this.#getJson(ADMIN_API_CALLS.auditLog, definedOnly(query));
  }

  /** Extension: moves a configuration's expiry without a new key; for OpenVPN the answer has the new certificate. */
  async extend(params: ExtendParams, options: PostOptions = {}): Promise<AnswerOf<'extend'>> {
    return this.#postJson(ADMIN_API_CALLS.extend, formOf(params), options);
  }

  /** Extension: a token a device redeems at `{baseUrl}enroll` with its own key (the token is in this answer only). */
  enrollmentToken(params: EnrollmentTokenParams, options: PostOptions = {}): Promise<AnswerOf<'enrollmentToken'>> {
    return this.#postJson(ADMIN_API_CALLS.enrollmentToken, definedOnly(params), options);
  }

  /** Extension: the enrollment tokens (of one user), newest first, with their state. */
  async enrollmentTokens(userId?: string): Promise<AnswerOf<'enrollmentTokens'>['enrollment_tokens']> {
    const query: Record<string, string> = userId === undefined ? {} : { user_id: userId };
    return (await this.#getJson(ADMIN_API_CALLS.enrollmentTokens, query)).enrollment_tokens;
  }

  /** Extension: redeeming the token answers 410 from now on. */
  revokeEnrollmentToken(userId: string, tokenId: string, options: PostOptions = {}): Promise<void> {
    return this.#postNoContent(
      ADMIN_API_CALLS.revokeEnrollmentToken.path,
      { user_id: userId, token_id: tokenId },
      options,
    );
  }

  /** Extension: registers a managed device of a user (the same registration again answers the same device). */
  async registerDevice(
    params: RegisterDeviceParams,
    options: PostOptions = {},
  ): Promise<AnswerOf<'registerDevice'>['device']> {
    return (await this.#postJson(ADMIN_API_CALLS.registerDevice, definedOnly(params), options)).device;
  }

  /** Extension: one page of the registered devices, newest first (pass `next_cursor` back as `cursor`). */
  devices(query: DevicesQuery = {}): Promise<AnswerOf<'devices'>> {
    return this.#getJson(ADMIN_API_CALLS.devices, definedOnly(query));
  }

  /** Extension: one device with its configurations. */
  async device(deviceId: string): Promise<AnswerOf<'device'>['device']> {
    return (await this.#getJson(ADMIN_API_CALLS.device, { device_id: deviceId })).device;
  }

  /** Extension: one device with its configurations and every change of its state, oldest first. */
  deviceWithHistory(deviceId: string): Promise<AnswerOf<'device'>> {
    return this.#getJson(ADMIN_API_CALLS.device, { device_id: deviceId });
  }

  /** Extension: retires a device; every configuration of it leaves the database and the nodes. */
  async retireDevice(deviceId: string, options: PostOptions = {}): Promise<AnswerOf<'retireDevice'>['device']> {
    return (await this.retireDeviceWithReceipt(deviceId, options)).device;
  }

  /** retire_device with the id of its revocation receipt (null when the device had no configuration, or was retired already). */
  async retireDeviceWithReceipt(
    deviceId: string,
    options: PostOptions = {},
  ): Promise<{ readonly device: AnswerOf<'retireDevice'>['device']; readonly revocationId: string | null }> {
    const call = ADMIN_API_CALLS.retireDevice;
    const response = await this.#send(
      'POST',
      call.path,
      new URLSearchParams({ device_id: deviceId }),
      idempotencyHeader(options),
    );
    const { device } = this.#parsed(response, call, await this.#okText(response));
    return { device, revocationId: response.headers.get(REVOCATION_HEADER) };
  }

  /**
   * Extension: suspends a device (its configurations leave every node until it is resumed), with
   * the id of the revocation receipt (for a device suspended already: its suspension's; null when
   * it had no configuration).
   */
  async suspendDevice(
    params: SuspendDeviceParams,
    options: PostOptions = {},
  ): Promise<{ readonly device: AnswerOf<'suspendDevice'>['device']; readonly revocationId: string | null }> {
    const call = ADMIN_API_CALLS.suspendDevice;
    const response = await this.#send(
      'POST',
      call.path,
      new URLSearchParams(definedOnly(params)),
      idempotencyHeader(options),
    );
    const { device } = this.#parsed(response, call, await this.#okText(response));
    return { device, revocationId: response.headers.get(REVOCATION_HEADER) };
  }

  /** Extension: ends a device's suspension; its unexpired configurations go back on their nodes. */
  async resumeDevice(deviceId: string, options: PostOptions = {}): Promise<AnswerOf<'resumeDevice'>['device']> {
    return (await this.#postJson(ADMIN_API_CALLS.resumeDevice, { device_id: deviceId }, options)).device;
  }

  /** Extension: one page of the connection history (pass `next_cursor` back as `cursor`). */
  connectionLog(query: ConnectionLogQuery = {}): Promise<AnswerOf<'connectionLog'>> {
    return this.#getJson(ADMIN_API_CALLS.connectionLog, definedOnly(query));
  }

  /** Extension: who held an address at a moment (through a node's deterministic NAT with `port`). */
  attribution(query: AttributionQuery): Promise<AnswerOf<'attribution'>> {
    return this.#getJson(ADMIN_API_CALLS.attribution, definedOnly(query));
  }

  /** Extension: the daily usage series per profile. */
  /** The profiles the key may use (extension). */
  async profiles(): Promise<AnswerOf<'profiles'>['profiles']> {
    return (await this.#getJson(ADMIN_API_CALLS.profiles, {})).profiles;
  }

  async stats(query: StatsQuery = {}): Promise<AnswerOf<'stats'>['stats']> {
    return (await this.#getJson(ADMIN_API_CALLS.stats, definedOnly(query))).stats;
  }

  /** Extension (scope admin): the webhook subscriptions. */
  async webhooks(): Promise<AnswerOf<'webhooks'>['webhooks']> {
    return (await this.#getJson(ADMIN_API_CALLS.webhooks, {})).webhooks;
  }

  /** Extension (scope admin): adds a subscription; the answer's secret is shown this once. */
  createWebhook(params: CreateWebhookParams, options: PostOptions = {}): Promise<AnswerOf<'createWebhook'>> {
    return this.#postJson(ADMIN_API_CALLS.createWebhook, definedOnly(params), options);
  }

  deleteWebhook(webhookId: string, options: PostOptions = {}): Promise<void> {
    return this.#postNoContent(ADMIN_API_CALLS.deleteWebhook.path, { webhook_id: webhookId }, options);
  }

  /** `overlap`: ISO 8601 duration the old secret keeps signing (default P1D). */
  rotateWebhookSecret(
    webhookId: string,
    overlap?: string,
    options: PostOptions = {},
  ): Promise<AnswerOf<'rotateWebhookSecret'>> {
    return this.#postJson(
      ADMIN_API_CALLS.rotateWebhookSecret,
      definedOnly({ webhook_id: webhookId, overlap }),
      options,
    );
  }

  /** Sends a `webhook.test` event now; answers what the receiver did. */
  testWebhook(webhookId: string, options: PostOptions = {}): Promise<AnswerOf<'testWebhook'>> {
    return this.#postJson(ADMIN_API_CALLS.testWebhook, { webhook_id: webhookId }, options);
  }

  /** One page of the delivery log, newest first; pass `next_cursor` as `cursor` for the next. */
  webhookDeliveries(query: WebhookDeliveriesQuery = {}): Promise<AnswerOf<'webhookDeliveries'>> {
    return this.#getJson(ADMIN_API_CALLS.webhookDeliveries, definedOnly(query));
  }

  /** Extension (scope admin): every admin key, never a secret. */
  async adminKeys(): Promise<AnswerOf<'adminKeys'>['admin_keys']> {
    return (await this.#getJson(ADMIN_API_CALLS.adminKeys, {})).admin_keys;
  }

  /** Extension (scope admin): makes an admin key within the calling key's rights; the answer's secret is shown this once. */
  createAdminKey(params: CreateAdminKeyParams, options: PostOptions = {}): Promise<AnswerOf<'createAdminKey'>> {
    return this.#postJson(ADMIN_API_CALLS.createAdminKey, definedOnly(params), options);
  }

  /** Extension (scope admin): revokes every key of the name; answers how many. */
  async revokeAdminKey(name: string, options: PostOptions = {}): Promise<AnswerOf<'revokeAdminKey'>['revoked']> {
    return (await this.#postJson(ADMIN_API_CALLS.revokeAdminKey, { name }, options)).revoked;
  }

  /** Extension (scope admin): keeps a user's (or a device's user's) records past their retention. */
  async createLegalHold(
    params: CreateLegalHoldParams,
    options: PostOptions = {},
  ): Promise<AnswerOf<'createLegalHold'>['legal_hold']> {
    return (await this.#postJson(ADMIN_API_CALLS.createLegalHold, definedOnly(params), options)).legal_hold;
  }

  /** Extension (scope admin): every stored legal hold, newest first. */
  async legalHolds(): Promise<AnswerOf<'legalHolds'>['legal_holds']> {
    return (await this.#getJson(ADMIN_API_CALLS.legalHolds, {})).legal_holds;
  }

  /** Extension (scope admin): ends a legal hold now. */
  async releaseLegalHold(
    holdId: string,
    options: PostOptions = {},
  ): Promise<AnswerOf<'releaseLegalHold'>['legal_hold']> {
    return (await this.#postJson(ADMIN_API_CALLS.releaseLegalHold, { hold_id: holdId }, options)).legal_hold;
  }

  async #getJson<A extends z.ZodType>(call: JsonCall<A>, query: Record<string, string>): Promise<z.infer<A>> {
    const search = new URLSearchParams(query).toString();
    const response = await this.#send('GET', search === '' ? call.path : `${call.path}?${search}`);
    return this.#parsed(response, call, await this.#okText(response));
  }

  #parsed<A extends z.ZodType>(response: Response, { path, answer }: JsonCall<A>, text: string): z.infer<A> {
    const parsed = answer.safeParse(JSON.parse(text));
    if (!parsed.success)
      throw new AdminApiError(
        response.status,
        `unexpected answer from ${path}: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
      );
    return parsed.data;
  }

  async #postJson<A extends z.ZodType>(
    call: JsonCall<A>,
    form: Record<string, string> | URLSearchParams,
    options: PostOptions,
  ): Promise<z.infer<A>> {
    const response = await this.#send('POST', call.path, new URLSearchParams(form), idempotencyHeader(options));
    return this.#parsed(response, call, await this.#okText(response));
  }

  async #postNoContent(path: string, form: Record<string, string>, options: PostOptions): Promise<void> {
    await this.#okText(await this.#send('POST', path, new URLSearchParams(form), idempotencyHeader(options)));
  }

  async #postRevoking(path: string, form: Record<string, string>, options: PostOptions): Promise<string | null> {
    const response = await this.#send(
      'POST',
      path,
      new URLSearchParams(form),
      idempotencyHeader(options),
      this.#options.revocationTimeoutMs ??
        Math.max(DEFAULT_REVOCATION_TIMEOUT_MS, this.#options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    );
    await this.#okText(response);
    return response.headers.get(REVOCATION_HEADER);
  }

  async #send(
    method: 'GET' | 'POST',
    path: string,
    body?: URLSearchParams,
    headers: Record<string, string> = {},
    timeoutMs = this.#options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  ): Promise<Response> {
    return (this.#options.fetch ?? fetch)(`${this.#base}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.#options.key}`, ...this.#options.headers, ...headers },
      ...(body === undefined ? {} : { body }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  }

  /** The body of a 2xx answer; anything else becomes an AdminApiError with the portal's message. */
  async #okText(response: Response): Promise<string> {
    const text = await response.text();
    if (response.ok) return text;
    let message = text.slice(0, 200) || response.statusText;
    try {
      const parsed = errorAnswer.safeParse(JSON.parse(text));
      if (parsed.success) message = parsed.data.error;
    } catch {
      // Not JSON: the raw text is the message.
    }
    throw new AdminApiError(response.status, message);
  }
}

/** The query parameters that were given, as text. */
function definedOnly(query: object): Record<string, string> {
  return Object.fromEntries(
    Object.entries(query)
      .filter(
        (entry): entry is [string, string | number] => typeof entry[1] === 'string' || typeof entry[1] === 'number',
      )
      .map(([name, value]) => [name, String(value)]),
  );
}

function idempotencyHeader(options: PostOptions): Record<string, string> {
  return options.idempotencyKey === undefined ? {} : { [IDEMPOTENCY_KEY_HEADER]: options.idempotencyKey };
}

/** The bytes as text, or null when they are not UTF-8 (a DER file). */
function utf8Text(bytes: Uint8Array): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

function formOf(params: CreateParams | ExtendParams): URLSearchParams {
  return new URLSearchParams(
    Object.entries(params).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}
