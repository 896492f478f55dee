// What each admin key may do: every Admin API call (the specification's eleven and the
// extensions: connection history, attribution, statistics, audit log, renewal, webhooks, enrollment tokens, devices, admin keys, legal holds) against every scope (read, write, admin) and every profile limit (none, the user's
// profile, another profile), as headscale tests its API keys. Every cell is asserted allowed
// (with its effect) or refused (403 naming what was missing, the database unchanged, and the
// refusal in the audit log).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ADMIN_API_CALLS,
  ADMIN_SCOPES,
  scopeAllows,
  type AdminScope,
  type WebhookInfo,
} from '../../../src/protocol/admin-api.js';
import { asNodeNumber, asProfileId, asUserId, type WireGuardKey } from '../../../src/shared/ids.js';
import { openConnection } from '../../../src/storage/connection-log.js';
import { wireGuardPublicKey } from '../../../src/wireguard/keys.js';
import {
  auditLog,
  authorize,
  bearer,
  makeAdminKey,
  ManualClock,
  portalState,
  twoProfiles,
} from '../../support/admin-keys.js';
import { errorBody } from '../../support/raw-http.js';
import { WebhookReceiver } from '../../support/webhook-receiver.js';
import { startTestPortal, type ApiResponse, type TestPortal } from '../../support/test-portal.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';

type Limit = 'every profile' | 'employees' | 'guests';
const LIMITS: readonly Limit[] = ['every profile', 'employees', 'guests'];

/** A user with one configuration in `employees` and one OAuth authorization, made with the secret. */
interface Subject {
  readonly userId: string;
  readonly connectionId: string;
}

interface Call {
  readonly name: keyof typeof NAMES;
  /** Calls that act on the user as a whole: a limited key needs every configuration of the user in its profiles. */
  readonly userWide?: boolean;
  /** Calls about no user (webhooks): the audit log records them without one. */
  readonly noUser?: boolean;
  /** Calls on one configuration or profile: refused for a profile outside the key's. */
  readonly perProfile?: boolean;
  /** Calls that look the user up first: to a limited key that cannot see the user, it does not exist. */
  readonly looksUpUser?: boolean;
  /** The admin key calls: how a key limited to guests is refused (the subject's key is for employees). */
  readonly guestsRefusal?: (keyName: string, subject: string) => RegExp;
  /** Look-ups of people (attribution): what a key limited to guests is answered, since the subject is none of its users. */
  readonly guestsAnswer?: { readonly status: number; readonly message: RegExp };
  /** Reads that are audited (look-ups of people by address): an allowed one is a row too. */
  readonly auditedRead?: boolean;
  readonly prepare?: (portal: TestPortal, subject: Subject) => Promise<void>;
  send(portal: TestPortal, subject: Subject, key: string): Promise<ApiResponse>;
  /** Asserts what an allowed call did or showed; `visible`: the profiles the key sees. */
  verify(portal: TestPortal, subject: Subject, response: ApiResponse, visible: readonly string[]): Promise<void>;
}

const NAMES = {
  connected_users: ADMIN_API_CALLS.connectedUsers,
  connection_list: ADMIN_API_CALLS.connectionList,
  users: ADMIN_API_CALLS.users,
  disabled_users: ADMIN_API_CALLS.disabledUsers,
  user_configuration_list: ADMIN_API_CALLS.userConfigurationList,
  create: ADMIN_API_CALLS.create,
  destroy: ADMIN_API_CALLS.destroy,
  disable_user: ADMIN_API_CALLS.disableUser,
  enable_user: ADMIN_API_CALLS.enableUser,
  delete_connection: ADMIN_API_CALLS.deleteConnection,
  delete_user_authorizations: ADMIN_API_CALLS.deleteUserAuthorizations,
  connection_log: ADMIN_API_CALLS.connectionLog,
  attribution: ADMIN_API_CALLS.attribution,
  stats: ADMIN_API_CALLS.stats,
  profiles: ADMIN_API_CALLS.profiles,
  audit_log: ADMIN_API_CALLS.auditLog,
  extend: ADMIN_API_CALLS.extend,
  webhooks: ADMIN_API_CALLS.webhooks,
  create_webhook: ADMIN_API_CALLS.createWebhook,
  delete_webhook: ADMIN_API_CALLS.deleteWebhook,
  rotate_webhook_secret: ADMIN_API_CALLS.rotateWebhookSecret,
  test_webhook: ADMIN_API_CALLS.testWebhook,
  webhook_deliveries: ADMIN_API_CALLS.webhookDeliveries,
  enrollment_token: ADMIN_API_CALLS.enrollmentToken,
  enrollment_tokens: ADMIN_API_CALLS.enrollmentTokens,
  revoke_enrollment_token: ADMIN_API_CALLS.revokeEnrollmentToken,
  revocation: ADMIN_API_CALLS.revocation,
  revocations: ADMIN_API_CALLS.revocations,
  register_device: ADMIN_API_CALLS.registerDevice,
  devices: ADMIN_API_CALLS.devices,
  device: ADMIN_API_CALLS.device,
  retire_device: ADMIN_API_CALLS.retireDevice,
  suspend_device: ADMIN_API_CALLS.suspendDevice,
  resume_device: ADMIN_API_CALLS.resumeDevice,
  admin_keys: ADMIN_API_CALLS.adminKeys,
  create_admin_key: ADMIN_API_CALLS.createAdminKey,
  revoke_admin_key: ADMIN_API_CALLS.revokeAdminKey,
  create_legal_hold: ADMIN_API_CALLS.createLegalHold,
  legal_holds: ADMIN_API_CALLS.legalHolds,
  release_legal_hold: ADMIN_API_CALLS.releaseLegalHold,
} as const;

/** Calls a key limited to some profiles may not make: they span every profile. */
const EVERY_PROFILE_CALLS: readonly (keyof typeof NAMES)[] = [
  'audit_log',
  'webhooks',
  'create_webhook',
  'delete_webhook',
  'rotate_webhook_secret',
  'test_webhook',
  'webhook_deliveries',
  'create_legal_hold',
  'legal_holds',
  'release_legal_hold',
];

/** Where test_webhook sends its event (a receiver on loopback, started by the matrix test). */
let receiverUrl = '';

/** A subscription made for the subject by the secret (a URL no event goes to: it asks only for node.up). */
async function subscribe(
  portal: TestPortal,
  subject: Subject,
  url = `https://192.0.2.1/${subject.userId}`,
): Promise<void> {
  await portal.admin.createWebhook({ url, event_types: 'node.up', description: subject.userId });
}

async function webhookOf(portal: TestPortal, subject: Subject): Promise<WebhookInfo> {
  const webhook = (await portal.admin.webhooks()).find((candidate) => candidate.description === subject.userId);
  assert.ok(webhook !== undefined, `the subscription of ${subject.userId}`);
  return webhook;
}

/** The revocation receipt of the subject's configuration, deleted by `prepare` with the secret, by user id. */
const receiptOfSubject = new Map<string, string>();

async function prepareReceipt(portal: TestPortal, subject: Subject): Promise<void> {
  receiptOfSubject.set(
    subject.userId,
    (await portal.admin.deleteConnection(subject.userId, subject.connectionId)) ?? '',
  );
}

/** The enrollment token made for a subject by `prepare`, by user id. */
const tokenOfSubject = new Map<string, string>();

async function prepareToken(portal: TestPortal, subject: Subject): Promise<void> {
  tokenOfSubject.set(
    subject.userId,
    (await portal.admin.enrollmentToken({ user_id: subject.userId, profile_id: 'employees' })).token_id,
  );
}

/** The legal hold made on a subject by `prepare` (with the secret), by user id. */
const holdOfSubject = new Map<string, string>();

async function prepareHold(portal: TestPortal, subject: Subject): Promise<void> {
  const hold = await portal.admin.createLegalHold({
    user_id: subject.userId,
    reason: `case of ${subject.userId}`,
    until: HOLD_UNTIL,
  });
  holdOfSubject.set(subject.userId, hold.hold_id);
}

/** Far after every cell's clock. */
const HOLD_UNTIL = '2027-01-01T00:00:00Z';

/** The device registered for a subject by `prepare`, by user id. */
const deviceOfSubject = new Map<string, string>();

async function prepareDevice(portal: TestPortal, subject: Subject): Promise<void> {
  const device = await portal.admin.registerDevice({
    user_id: subject.userId,
    profile_id: 'employees',
    platform: 'windows',
    serial: `S-${subject.userId}`,
  });
  deviceOfSubject.set(subject.userId, device.device_id);
}

const CALLS: readonly Call[] = [
  {
    name: 'connected_users',
    send: (portal, _subject, key) => portal.get('/connected_users', {}, bearer(key)),
    async verify(_portal, _subject, response, visible) {
      assert.deepEqual(Object.keys((response.json() as { connected_users: object }).connected_users), visible);
    },
  },
  {
    name: 'connection_list',
    send: (portal, _subject, key) => portal.get('/connection_list', { show_all: 'on' }, bearer(key)),
    async verify(_portal, subject, response, visible) {
      const lists = (response.json() as { connection_list: Record<string, { connection_id: string }[]> })
        .connection_list;
      assert.deepEqual(Object.keys(lists), visible);
      const listed = Object.values(lists)
        .flat()
        .some((entry) => entry.connection_id === subject.connectionId);
      assert.equal(
        listed,
        visible.includes('employees'),
        'the configuration is listed only where its profile is visible',
      );
    },
  },
  {
    name: 'users',
    send: (portal, _subject, key) => portal.get('/users', {}, bearer(key)),
    async verify(_portal, subject, response, visible) {
      assert.equal(
        (response.json() as { users: string[] }).users.includes(subject.userId),
        visible.includes('employees'),
      );
    },
  },
  {
    name: 'disabled_users',
    prepare: async (portal, subject) => void (await portal.post('/disable_user', { user_id: subject.userId })),
    send: (portal, _subject, key) => portal.get('/disabled_users', {}, bearer(key)),
    async verify(_portal, subject, response, visible) {
      assert.equal(
        (response.json() as { disabled_users: string[] }).disabled_users.includes(subject.userId),
        visible.includes('employees'),
      );
    },
  },
  {
    name: 'user_configuration_list',
    looksUpUser: true,
    send: (portal, subject, key) => portal.get('/user_configuration_list', { user_id: subject.userId }, bearer(key)),
    async verify(_portal, subject, response, visible) {
      const list = (response.json() as { user_configuration_list: { connection_id: string }[] })
        .user_configuration_list;
      assert.deepEqual(
        list.map((entry) => entry.connection_id),
        visible.includes('employees') ? [subject.connectionId] : [],
      );
    },
  },
  {
    name: 'create',
    perProfile: true,
    send: (portal, subject, key) =>
      portal.post('/create', { user_id: subject.userId, profile_id: 'employees' }, bearer(key)),
    async verify(portal, subject, response) {
      assert.match(response.text, /^\[Interface\]/);
      assert.equal((await portal.admin.userConfigurationList(subject.userId)).length, 2);
    },
  },
  {
    name: 'destroy',
    userWide: true,
    send: (portal, subject, key) => portal.post('/destroy', { user_id: subject.userId }, bearer(key)),
    async verify(portal, subject) {
      assert.equal((await portal.admin.users()).includes(subject.userId), false);
    },
  },
  {
    name: 'disable_user',
    userWide: true,
    send: (portal, subject, key) => portal.post('/disable_user', { user_id: subject.userId }, bearer(key)),
    async verify(portal, subject) {
      assert.equal((await portal.admin.disabledUsers()).includes(subject.userId), true);
    },
  },
  {
    name: 'enable_user',
    userWide: true,
    prepare: async (portal, subject) => void (await portal.post('/disable_user', { user_id: subject.userId })),
    send: (portal, subject, key) => portal.post('/enable_user', { user_id: subject.userId }, bearer(key)),
    async verify(portal, subject) {
      assert.equal((await portal.admin.disabledUsers()).includes(subject.userId), false);
    },
  },
  {
    name: 'delete_connection',
    perProfile: true,
    looksUpUser: true,
    send: (portal, subject, key) =>
      portal.post('/delete_connection', { user_id: subject.userId, connection_id: subject.connectionId }, bearer(key)),
    async verify(portal, subject) {
      assert.deepEqual(await portal.admin.userConfigurationList(subject.userId), []);
    },
  },
  {
    name: 'delete_user_authorizations',
    userWide: true,
    send: (portal, subject, key) =>
      portal.post('/delete_user_authorizations', { user_id: subject.userId }, bearer(key)),
    async verify(portal, subject) {
      const left = await portal.portal.ctx.db
        .selectFrom('oauth_authorizations')
        .select('auth_key')
        .where('user_id', '=', subject.userId)
        .execute();
      assert.deepEqual(left, []);
    },
  },
  {
    name: 'connection_log',
    perProfile: true,
    send: (portal, subject, key) =>
      portal.get('/connection_log', { user_id: subject.userId, profile_id: 'employees' }, bearer(key)),
    async verify(_portal, _subject, response) {
      // No node here, so no session: the answer is an empty page.
      assert.deepEqual(response.json(), { connection_log: [], next_cursor: null });
    },
  },
  {
    name: 'attribution',
    noUser: true,
    auditedRead: true,
    guestsAnswer: { status: 404, message: /^no session held 10\.44\.\d+\.\d+ at / },
    async prepare(portal, subject) {
      const db = portal.portal.ctx.db;
      const peer = await db
        .selectFrom('wg_peers')
        .select(['ip_four', 'ip_six'])
        .where('public_key', '=', subject.connectionId)
        .executeTakeFirstOrThrow();
      await openConnection(db, {
        userId: asUserId(subject.userId),
        profileId: asProfileId('employees'),
        vpnProto: 'wireguard',
        connectionId: subject.connectionId,
        nodeNumber: asNodeNumber(0),
        ipFour: peer.ip_four,
        ipSix: peer.ip_six,
        originatingIp: null,
        connectedAt: portal.portal.ctx.clock.now(),
      });
    },
    async send(portal, subject, key) {
      const peer = await portal.portal.ctx.db
        .selectFrom('wg_peers')
        .select('ip_four')
        .where('public_key', '=', subject.connectionId)
        .executeTakeFirstOrThrow();
      const at = portal.portal.ctx.clock.now().toISOString();
      return portal.get('/attribution', { ip: peer.ip_four, at, reason: 'matrix' }, bearer(key));
    },
    async verify(_portal, subject, response) {
      const { sessions } = response.json() as { sessions: { user_id: string }[] };
      assert.deepEqual(
        sessions.map((session) => session.user_id),
        [subject.userId],
      );
    },
  },
  {
    name: 'stats',
    send: (portal, _subject, key) => portal.get('/stats', {}, bearer(key)),
    async verify(_portal, _subject, response, visible) {
      assert.deepEqual(
        Object.keys((response.json() as { stats: object }).stats),
        visible,
        'a limited key sees its profiles only',
      );
    },
  },
  {
    name: 'profiles',
    send: (portal, _subject, key) => portal.get('/profiles', {}, bearer(key)),
    async verify(_portal, _subject, response, visible) {
      const { profiles } = response.json() as { profiles: { profile_id: string }[] };
      assert.deepEqual(
        profiles.map((profile) => profile.profile_id),
        visible,
        'a limited key sees its profiles only',
      );
    },
  },
  {
    name: 'audit_log',
    send: (portal, subject, key) => portal.get('/audit_log', { user_id: subject.userId }, bearer(key)),
    async verify(_portal, subject, response) {
      const entries = (response.json() as { audit_log: { call: string; user_id: string }[] }).audit_log;
      assert.deepEqual(
        entries.map((entry) => [entry.call, entry.user_id]),
        [['create', subject.userId]],
        'the creation of the subject by the secret',
      );
    },
  },
  {
    name: 'extend',
    perProfile: true,
    looksUpUser: true,
    send: (portal, subject, key) =>
      portal.post('/extend', { user_id: subject.userId, connection_id: subject.connectionId }, bearer(key)),
    async verify(portal, subject, response) {
      const answer = response.json() as { connection_id: string; expires_at: string; certificate: string | null };
      assert.deepEqual([answer.connection_id, answer.certificate], [subject.connectionId, null]);
      const [configuration] = await portal.admin.userConfigurationList(subject.userId);
      assert.equal(configuration?.expires_at, answer.expires_at, 'the new expiry is stored');
    },
  },
  {
    name: 'webhooks',
    noUser: true,
    prepare: subscribe,
    send: (portal, _subject, key) => portal.get('/webhooks', {}, bearer(key)),
    async verify(_portal, subject, response) {
      const { webhooks } = response.json() as { webhooks: Record<string, unknown>[] };
      assert.ok(webhooks.some((webhook) => webhook['description'] === subject.userId));
      assert.ok(
        webhooks.every((webhook) => !('secret' in webhook)),
        'no secret in the list',
      );
    },
  },
  {
    name: 'create_webhook',
    noUser: true,
    send: (portal, subject, key) =>
      portal.post(
        '/create_webhook',
        { url: `https://192.0.2.1/${subject.userId}`, event_types: 'node.up', description: subject.userId },
        bearer(key),
      ),
    async verify(portal, subject, response) {
      assert.match((response.json() as { secret: string }).secret, /^whsec_/);
      await webhookOf(portal, subject);
    },
  },
  {
    name: 'delete_webhook',
    noUser: true,
    prepare: subscribe,
    send: async (portal, subject, key) =>
      portal.post('/delete_webhook', { webhook_id: (await webhookOf(portal, subject)).webhook_id }, bearer(key)),
    async verify(portal, subject) {
      assert.equal(
        (await portal.admin.webhooks()).some((webhook) => webhook.description === subject.userId),
        false,
      );
    },
  },
  {
    name: 'rotate_webhook_secret',
    noUser: true,
    prepare: subscribe,
    send: async (portal, subject, key) =>
      portal.post('/rotate_webhook_secret', { webhook_id: (await webhookOf(portal, subject)).webhook_id }, bearer(key)),
    async verify(portal, subject, response) {
      assert.match((response.json() as { secret: string }).secret, /^whsec_/);
      assert.notEqual((await webhookOf(portal, subject)).previous_secret_until, null);
    },
  },
  {
    name: 'test_webhook',
    noUser: true,
    prepare: (portal, subject) => subscribe(portal, subject, receiverUrl),
    send: async (portal, subject, key) =>
      portal.post('/test_webhook', { webhook_id: (await webhookOf(portal, subject)).webhook_id }, bearer(key)),
    async verify(_portal, _subject, response) {
      assert.deepEqual(
        [(response.json() as { outcome: string }).outcome, (response.json() as { status: number }).status],
        ['delivered', 200],
      );
    },
  },
  {
    name: 'webhook_deliveries',
    noUser: true,
    send: (portal, _subject, key) => portal.get('/webhook_deliveries', { limit: '1' }, bearer(key)),
    async verify(_portal, _subject, response) {
      assert.ok(Array.isArray((response.json() as { webhook_deliveries: unknown[] }).webhook_deliveries));
    },
  },
  {
    name: 'enrollment_token',
    perProfile: true,
    send: (portal, subject, key) =>
      portal.post('/enrollment_token', { user_id: subject.userId, profile_id: 'employees' }, bearer(key)),
    async verify(portal, subject, response) {
      const answer = response.json() as { enrollment_token: string; token_id: string; uses: number };
      assert.match(answer.enrollment_token, /^vpe_/);
      assert.equal(answer.uses, 1);
      const listed = await portal.admin.enrollmentTokens(subject.userId);
      assert.deepEqual(
        listed.map((token) => [token.token_id, token.state]),
        [[answer.token_id, 'usable']],
      );
    },
  },
  {
    name: 'enrollment_tokens',
    prepare: prepareToken,
    send: (portal, subject, key) => portal.get('/enrollment_tokens', { user_id: subject.userId }, bearer(key)),
    async verify(_portal, subject, response, visible) {
      const listed = (response.json() as { enrollment_tokens: { token_id: string }[] }).enrollment_tokens.map(
        (token) => token.token_id,
      );
      assert.deepEqual(
        listed,
        visible.includes('employees') ? [tokenOfSubject.get(subject.userId)] : [],
        'a limited key sees its profiles only',
      );
    },
  },
  {
    name: 'revoke_enrollment_token',
    perProfile: true,
    prepare: prepareToken,
    send: (portal, subject, key) =>
      portal.post(
        '/revoke_enrollment_token',
        { user_id: subject.userId, token_id: tokenOfSubject.get(subject.userId) ?? '' },
        bearer(key),
      ),
    async verify(portal, subject) {
      const [token] = await portal.admin.enrollmentTokens(subject.userId);
      assert.equal(token?.state, 'revoked');
    },
  },
  {
    name: 'revocation',
    noUser: true,
    perProfile: true,
    prepare: prepareReceipt,
    send: (portal, subject, key) =>
      portal.get('/revocation', { revocation_id: receiptOfSubject.get(subject.userId) ?? '' }, bearer(key)),
    async verify(_portal, subject, response) {
      const receipt = response.json() as { revocation_id: string; user_id: string; connection_ids: string[] };
      assert.deepEqual(
        [receipt.revocation_id, receipt.user_id, receipt.connection_ids],
        [receiptOfSubject.get(subject.userId), subject.userId, [subject.connectionId]],
      );
    },
  },
  {
    name: 'revocations',
    prepare: prepareReceipt,
    send: (portal, subject, key) => portal.get('/revocations', { user_id: subject.userId }, bearer(key)),
    async verify(_portal, subject, response, visible) {
      const listed = (response.json() as { revocations: { revocation_id: string }[] }).revocations.map(
        (receipt) => receipt.revocation_id,
      );
      assert.deepEqual(
        listed,
        visible.includes('employees') ? [receiptOfSubject.get(subject.userId)] : [],
        'a limited key sees its profiles only',
      );
    },
  },
  {
    name: 'register_device',
    perProfile: true,
    send: (portal, subject, key) =>
      portal.post(
        '/register_device',
        { user_id: subject.userId, profile_id: 'employees', platform: 'linux', serial: `S-${subject.userId}` },
        bearer(key),
      ),
    async verify(portal, subject, response) {
      const { device } = response.json() as { device: { device_id: string; state: string } };
      assert.equal(device.state, 'registered');
      assert.equal((await portal.admin.device(device.device_id)).user_id, subject.userId);
    },
  },
  {
    name: 'devices',
    prepare: prepareDevice,
    send: (portal, subject, key) => portal.get('/devices', { user_id: subject.userId }, bearer(key)),
    async verify(_portal, subject, response, visible) {
      const listed = (response.json() as { devices: { device_id: string }[] }).devices.map(
        (device) => device.device_id,
      );
      assert.deepEqual(
        listed,
        visible.includes('employees') ? [deviceOfSubject.get(subject.userId)] : [],
        'a limited key sees its profiles only',
      );
    },
  },
  {
    name: 'device',
    noUser: true,
    perProfile: true,
    prepare: prepareDevice,
    send: (portal, subject, key) =>
      portal.get('/device', { device_id: deviceOfSubject.get(subject.userId) ?? '' }, bearer(key)),
    async verify(_portal, subject, response) {
      assert.equal((response.json() as { device: { user_id: string } }).device.user_id, subject.userId);
    },
  },
  {
    name: 'retire_device',
    noUser: true,
    perProfile: true,
    prepare: prepareDevice,
    send: (portal, subject, key) =>
      portal.post('/retire_device', { device_id: deviceOfSubject.get(subject.userId) ?? '' }, bearer(key)),
    async verify(portal, subject) {
      assert.equal((await portal.admin.device(deviceOfSubject.get(subject.userId) ?? '')).state, 'retired');
    },
  },
  {
    name: 'suspend_device',
    noUser: true,
    perProfile: true,
    prepare: prepareDevice,
    send: (portal, subject, key) =>
      portal.post('/suspend_device', { device_id: deviceOfSubject.get(subject.userId) ?? '' }, bearer(key)),
    async verify(portal, subject) {
      assert.equal((await portal.admin.device(deviceOfSubject.get(subject.userId) ?? '')).state, 'suspended');
    },
  },
  {
    name: 'resume_device',
    noUser: true,
    perProfile: true,
    async prepare(portal, subject) {
      await prepareDevice(portal, subject);
      await portal.admin.suspendDevice({ device_id: deviceOfSubject.get(subject.userId) ?? '' });
    },
    send: (portal, subject, key) =>
      portal.post('/resume_device', { device_id: deviceOfSubject.get(subject.userId) ?? '' }, bearer(key)),
    async verify(portal, subject) {
      assert.equal((await portal.admin.device(deviceOfSubject.get(subject.userId) ?? '')).state, 'registered');
    },
  },
  {
    name: 'admin_keys',
    noUser: true,
    prepare: async (portal, subject) =>
      void (await makeAdminKey(portal, `listed-${subject.userId}`, { scope: 'read', profiles: ['employees'] })),
    send: (portal, _subject, key) => portal.get('/admin_keys', {}, bearer(key)),
    async verify(_portal, subject, response) {
      const keys = (response.json() as { admin_keys: Record<string, unknown>[] }).admin_keys;
      assert.ok(keys.some((key) => key['name'] === `listed-${subject.userId}`));
      assert.ok(
        keys.every((key) => !('secret' in key) && !('secret_hash' in key)),
        'no secret in the list',
      );
    },
  },
  {
    name: 'create_admin_key',
    noUser: true,
    guestsRefusal: (keyName, subject) =>
      new RegExp(
        `^key "${keyName}" may not make key "made-${subject}": profiles employees are outside its own \\(guests\\)$`,
      ),
    send: (portal, subject, key) =>
      portal.post('/create_admin_key', { name: `made-${subject.userId}`, profiles: 'employees' }, bearer(key)),
    async verify(portal, subject, response) {
      assert.match((response.json() as { secret: string }).secret, /^vpa_/);
      assert.ok((await portal.admin.adminKeys()).some((key) => key.name === `made-${subject.userId}`));
    },
  },
  {
    name: 'revoke_admin_key',
    noUser: true,
    guestsRefusal: (keyName, subject) =>
      new RegExp(
        `^key "${keyName}" may not revoke key "old-${subject}": profiles employees are outside its own \\(guests\\)$`,
      ),
    prepare: async (portal, subject) =>
      void (await makeAdminKey(portal, `old-${subject.userId}`, { scope: 'read', profiles: ['employees'] })),
    send: (portal, subject, key) => portal.post('/revoke_admin_key', { name: `old-${subject.userId}` }, bearer(key)),
    async verify(portal, subject) {
      assert.equal(
        (await portal.admin.adminKeys()).find((key) => key.name === `old-${subject.userId}`)?.state,
        'revoked',
      );
    },
  },
  {
    name: 'create_legal_hold',
    send: (portal, subject, key) =>
      portal.post(
        '/create_legal_hold',
        { user_id: subject.userId, reason: `case of ${subject.userId}`, until: HOLD_UNTIL },
        bearer(key),
      ),
    async verify(portal, subject, response) {
      const { legal_hold } = response.json() as { legal_hold: { hold_id: string; user_id: string; state: string } };
      assert.deepEqual([legal_hold.user_id, legal_hold.state], [subject.userId, 'active']);
      assert.ok((await portal.admin.legalHolds()).some((hold) => hold.hold_id === legal_hold.hold_id));
    },
  },
  {
    name: 'legal_holds',
    noUser: true,
    prepare: prepareHold,
    send: (portal, _subject, key) => portal.get('/legal_holds', {}, bearer(key)),
    async verify(_portal, subject, response) {
      const holds = (response.json() as { legal_holds: { hold_id: string }[] }).legal_holds;
      assert.ok(holds.some((hold) => hold.hold_id === holdOfSubject.get(subject.userId)));
    },
  },
  {
    name: 'release_legal_hold',
    noUser: true,
    prepare: prepareHold,
    send: (portal, subject, key) =>
      portal.post('/release_legal_hold', { hold_id: holdOfSubject.get(subject.userId) ?? '' }, bearer(key)),
    async verify(portal, subject) {
      const hold = (await portal.admin.legalHolds()).find(
        (candidate) => candidate.hold_id === holdOfSubject.get(subject.userId),
      );
      assert.equal(hold?.state, 'released');
    },
  },
];

/** null: allowed; else the refusal's status and message. */
function refusal(
  call: Call,
  scope: AdminScope,
  limit: Limit,
  keyName: string,
  userId: string,
): { readonly status: number; readonly message: RegExp } | null {
  const needed = NAMES[call.name].scope;
  const forbidden = (message: string) => ({ status: 403, message: new RegExp(message) });
  if (!scopeAllows(scope, needed))
    return forbidden(`^key "${keyName}" has scope "${scope}"; ${call.name} needs scope "${needed}"$`);
  if (EVERY_PROFILE_CALLS.includes(call.name) && limit !== 'every profile')
    return forbidden(`^key "${keyName}" is limited to profiles ${limit}; ${call.name} needs a key for every profile$`);
  if (limit !== 'guests') return null;
  if (call.guestsAnswer !== undefined) return call.guestsAnswer;
  if (call.guestsRefusal !== undefined) return { status: 403, message: call.guestsRefusal(keyName, userId) };
  // The subject has a configuration in employees only: to a guests key it is no user at all.
  if (call.looksUpUser === true || call.userWide === true) return { status: 400, message: /^user does not exist$/ };
  if (call.perProfile === true)
    return forbidden(`^key "${keyName}" may not use profile "employees" \\(it is limited to: guests\\)$`);
  return null;
}

async function makeSubject(portal: TestPortal, userId: string): Promise<Subject> {
  const created = await portal.post('/create', { user_id: userId, profile_id: 'employees' });
  assert.equal(created.status, 200, created.text);
  await authorize(portal, userId, `oauth-${userId}`);
  const privateKey = parseWireGuardFile(created.text).interface.get('PrivateKey') as WireGuardKey;
  return { userId, connectionId: wireGuardPublicKey(privateKey) };
}

test('every call × every scope × every profile limit is allowed or refused as the scope table says, and a refusal changes nothing', async (t) => {
  // Every cell in a minute of its own: refusals of one key and reason within a minute are
  // coalesced into one audit row, and each refusal here must be seen as a row of its own.
  const clock = new ManualClock();
  // 360 cells each make a subject with its configuration: more than a /24 of employees holds.
  const [employees, ...others] = twoProfiles.ProfileList ?? [];
  const ProfileList = employees === undefined ? [] : [{ ...employees, wRangeFour: '10.44.0.0/22' }, ...others];
  const portal = await startTestPortal({
    clock,
    config: { ...twoProfiles, ProfileList, webhooks: { allowPrivateTargets: ['127.0.0.0/8'] } },
  });
  t.after(() => portal.close());
  const receiver = await WebhookReceiver.start();
  t.after(() => receiver.close());
  receiverUrl = receiver.url;
  const keys = new Map<string, string>();
  for (const scope of ADMIN_SCOPES) {
    for (const limit of LIMITS) {
      const name = `${scope}-${limit === 'every profile' ? 'all' : limit}`;
      keys.set(name, await makeAdminKey(portal, name, { scope, profiles: limit === 'every profile' ? null : [limit] }));
    }
  }
  assert.equal(
    CALLS.length,
    40,
    'the eleven calls, connection_log, attribution, stats, profiles, audit_log, extend, the six webhook calls, the three enrollment token calls, the two revocation calls, the six device calls, the three admin key calls and the three legal hold calls',
  );

  let cells = 0;
  let refused = 0;
  for (const call of CALLS) {
    for (const scope of ADMIN_SCOPES) {
      for (const limit of LIMITS) {
        const keyName = `${scope}-${limit === 'every profile' ? 'all' : limit}`;
        const cell = `${call.name} with ${keyName}`;
        clock.advance(60_000);
        const subject = await makeSubject(portal, `u${cells}`);
        await call.prepare?.(portal, subject);
        const before = await portalState(portal);
        const [newestBefore] = await auditLog(portal, 1);
        const response = await call.send(portal, subject, keys.get(keyName) ?? '');
        const expected = refusal(call, scope, limit, keyName, subject.userId);
        const [newest] = await auditLog(portal, 1);
        if (expected !== null && expected.status === 400 && NAMES[call.name].method === 'GET') {
          // A read that finds nothing is not recorded.
          refused++;
          assert.equal(response.status, 400, `${cell}: ${response.text}`);
          assert.match(errorBody(response.text), expected.message, cell);
          assert.equal(newest?.auditId, newestBefore?.auditId, `${cell}: a read is not recorded`);
        } else if (expected !== null) {
          refused++;
          assert.equal(response.status, expected.status, `${cell}: ${response.text}`);
          assert.match(errorBody(response.text), expected.message, cell);
          assert.deepEqual(await portalState(portal), before, `${cell}: nothing changed`);
          assert.ok(
            newest !== undefined && newest.auditId !== newestBefore?.auditId,
            `${cell}: the refusal is in the audit log`,
          );
          assert.deepEqual(
            {
              key: newest.keyName,
              call: newest.call,
              status: newest.status,
              user: newest.userId,
              detail: newest.detail,
            },
            {
              key: keyName,
              call: call.name,
              status: expected.status,
              user: call.name.endsWith('users') || call.noUser === true ? null : subject.userId,
              detail: errorBody(response.text),
            },
            cell,
          );
        } else {
          assert.ok(response.status === 200 || response.status === 204, `${cell}: ${response.status} ${response.text}`);
          const visible = limit === 'every profile' ? ['employees', 'guests'] : [limit];
          await call.verify(portal, subject, response, visible);
          if (NAMES[call.name].method === 'POST' || call.auditedRead === true) {
            assert.deepEqual(
              [newest?.keyName, newest?.call, newest?.status],
              [keyName, call.name, response.status],
              `${cell}: the change (or the look-up) is in the audit log`,
            );
          } else {
            assert.equal(newest?.auditId, newestBefore?.auditId, `${cell}: a read is not recorded`);
          }
        }
        cells++;
      }
    }
  }
  assert.equal(cells, 360);
  // read: the 11 POSTs, audit_log and the 6 webhook calls, ×3 limits; write: destroy,
  // delete_user_authorizations, audit_log and the webhook calls, ×3; admin: audit_log and the
  // webhook calls for the 2 limited keys; a guests-limited key on the subject's employees
  // configuration or device: write create, delete_connection, extend, disable, enable,
  // enrollment_token, revoke_enrollment_token, register_device, retire_device; admin those and
  // destroy, delete_user_authorizations; every scope the history of the employees profile, its
  // device and the receipt of its configuration; the three admin key calls for read and write,
  // ×3, and a guests-limited admin key making or revoking a key for employees; every scope's
  // guests key asking for the subject's configurations (a user it cannot see); the three legal
  // hold calls for read and write, ×3, and for the 2 limited admin keys; every scope's guests key
  // looking up who held the subject's address (a session it cannot see: 404); suspend_device and
  // resume_device for read ×3 and for the guests-limited write and admin keys.
  assert.equal(refused, 54 + 27 + 14 + 9 + 11 + 6 + 3 + 18 + 2 + 3 + 24 + 3 + 10, 'the refusals the table predicts');
});

test('a key limited to one profile acts only on that profile: a user with configurations in two profiles is out of its reach as a whole', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(() => portal.close());
  const mdm = await makeAdminKey(portal, 'mdm', { scope: 'admin', profiles: ['employees'] });
  const laptop = await portal.post('/create', { user_id: 'alice', profile_id: 'employees' });
  const guestPhone = await portal.post('/create', { user_id: 'alice', profile_id: 'guests' });
  const idOf = (response: ApiResponse) =>
    wireGuardPublicKey(parseWireGuardFile(response.text).interface.get('PrivateKey') as WireGuardKey);

  const list = await portal.get('/user_configuration_list', { user_id: 'alice' }, bearer(mdm));
  assert.deepEqual(
    (list.json() as { user_configuration_list: { connection_id: string }[] }).user_configuration_list.map(
      (entry) => entry.connection_id,
    ),
    [idOf(laptop)],
  );
  const before = await portalState(portal);
  for (const path of ['/destroy', '/disable_user', '/enable_user', '/delete_user_authorizations']) {
    const response = await portal.post(path, { user_id: 'alice' }, bearer(mdm));
    assert.equal(response.status, 403, path);
    assert.equal(
      errorBody(response.text),
      'key "mdm" may not change user "alice" as a whole: the user has configurations in guests, outside its profiles (employees)',
    );
  }
  const other = await portal.post(
    '/delete_connection',
    { user_id: 'alice', connection_id: idOf(guestPhone) },
    bearer(mdm),
  );
  assert.equal(other.status, 403);
  assert.equal(errorBody(other.text), 'key "mdm" may not use profile "guests" (it is limited to: employees)');
  assert.deepEqual(await portalState(portal), before, 'nothing changed');

  // Its own configuration it may delete; then the user lies wholly in another profile.
  assert.equal(
    (await portal.post('/delete_connection', { user_id: 'alice', connection_id: idOf(laptop) }, bearer(mdm))).status,
    204,
  );
  assert.deepEqual(await portal.admin.users(), ['alice']);
  assert.deepEqual(
    (await portal.get('/users', {}, bearer(mdm))).json(),
    { users: [] },
    'alice has nothing in its profile any more',
  );

  // A user without any configuration belongs to no profile: only a key for every profile sees it.
  await portal.post('/delete_connection', { user_id: 'alice', connection_id: idOf(guestPhone) });
  const empty = await portal.post('/destroy', { user_id: 'alice' }, bearer(mdm));
  assert.equal(empty.status, 400);
  assert.equal(errorBody(empty.text), 'user does not exist');

  // A profile outside the key is refused before it is looked up: the key learns nothing about others.
  const unknown = await portal.post('/create', { user_id: 'bob', profile_id: 'no-such-profile' }, bearer(mdm));
  assert.equal(unknown.status, 403);
  assert.equal(
    errorBody(unknown.text),
    'key "mdm" may not use profile "no-such-profile" (it is limited to: employees)',
  );
});

test('to a key limited to some profiles, a user with no configuration in them looks exactly like a user that does not exist', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(() => portal.close());
  const mdm = await makeAdminKey(portal, 'mdm', { scope: 'admin', profiles: ['employees'] });
  const guest = await portal.post('/create', { user_id: 'gina', profile_id: 'guests' });
  const before = await portalState(portal);
  const answers = async (userId: string) => {
    const seen: string[] = [];
    const list = await portal.get('/user_configuration_list', { user_id: userId }, bearer(mdm));
    seen.push(`${list.status} ${list.text}`);
    for (const path of ['/destroy', '/disable_user', '/enable_user', '/delete_user_authorizations', '/extend']) {
      const response = await portal.post(path, { user_id: userId, connection_id: 'x', expires_in: 'P1D' }, bearer(mdm));
      seen.push(`${path} ${response.status} ${response.text}`);
    }
    const deleted = await portal.post('/delete_connection', { user_id: userId, connection_id: 'x' }, bearer(mdm));
    seen.push(`${deleted.status} ${deleted.text}`);
    return seen;
  };
  const ofGina = await answers('gina');
  assert.deepEqual(ofGina, await answers('nobody'), 'the key cannot tell gina from an unknown user');
  assert.match(ofGina[0] ?? '', /^400 .*user does not exist/);
  assert.deepEqual(await portalState(portal), before, 'nothing changed');
  assert.equal(guest.status, 200);
});

test('a key limited to some profiles changes no user who has an enrollment token in another profile', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(() => portal.close());
  const writer = await makeAdminKey(portal, 'writer', { scope: 'write', profiles: ['employees'] });
  const admin = await makeAdminKey(portal, 'admin', { scope: 'admin', profiles: ['employees'] });
  assert.equal((await portal.post('/create', { user_id: 'mixt', profile_id: 'employees' })).status, 200);
  const token = await portal.post('/enrollment_token', { user_id: 'mixt', profile_id: 'guests' });
  assert.equal(token.status, 200, token.text);
  await authorize(portal, 'mixt', 'mixt-auth');
  const tokenId = (token.json() as { token_id: string }).token_id;
  const before = await portalState(portal);

  const revoke = await portal.post('/revoke_enrollment_token', { user_id: 'mixt', token_id: tokenId }, bearer(writer));
  assert.equal(revoke.status, 403, revoke.text);
  const expected = (key: string) =>
    `key "${key}" may not change user "mixt" as a whole: the user has enrollment tokens in guests, outside its profiles (employees)`;
  for (const [path, key, name] of [
    ['/disable_user', writer, 'writer'],
    ['/enable_user', writer, 'writer'],
    ['/destroy', admin, 'admin'],
    ['/delete_user_authorizations', admin, 'admin'],
  ] as const) {
    const response = await portal.post(path, { user_id: 'mixt' }, bearer(key));
    assert.equal(response.status, 403, `${path}: ${response.text}`);
    assert.equal(errorBody(response.text), expected(name), path);
  }
  assert.deepEqual(await portalState(portal), before, 'the token, the user and its authorizations are untouched');

  // A revoked token is still the user's until housekeeping deletes it: destroy would delete it too.
  assert.equal((await portal.post('/revoke_enrollment_token', { user_id: 'mixt', token_id: tokenId })).status, 204);
  assert.equal((await portal.post('/destroy', { user_id: 'mixt' }, bearer(admin))).status, 403);
  // A token in the key's own profile is within reach.
  assert.equal((await portal.post('/enrollment_token', { user_id: 'solo', profile_id: 'employees' })).status, 200);
  assert.equal((await portal.post('/create', { user_id: 'solo', profile_id: 'employees' })).status, 200);
  assert.equal((await portal.post('/disable_user', { user_id: 'solo' }, bearer(writer))).status, 204);
});

test('a key limited to some profiles changes no user who has a device registered in another profile', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(() => portal.close());
  const writer = await makeAdminKey(portal, 'writer', { scope: 'write', profiles: ['employees'] });
  const admin = await makeAdminKey(portal, 'admin', { scope: 'admin', profiles: ['employees'] });
  assert.equal((await portal.post('/create', { user_id: 'held', profile_id: 'employees' })).status, 200);
  // A device staged in guests, with no configuration yet: destroy would delete it, disable_user keep it from enrolling.
  await portal.admin.registerDevice({ user_id: 'held', profile_id: 'guests', platform: 'macos', serial: 'G-STAGED' });
  await authorize(portal, 'held', 'held-auth');
  const before = await portalState(portal);
  for (const [path, key, name] of [
    ['/disable_user', writer, 'writer'],
    ['/enable_user', writer, 'writer'],
    ['/destroy', admin, 'admin'],
    ['/delete_user_authorizations', admin, 'admin'],
  ] as const) {
    const response = await portal.post(path, { user_id: 'held' }, bearer(key));
    assert.equal(response.status, 403, `${path}: ${response.text}`);
    assert.equal(
      errorBody(response.text),
      `key "${name}" may not change user "held" as a whole: the user has devices in guests, outside its profiles (employees)`,
      path,
    );
  }
  assert.deepEqual(await portalState(portal), before, 'the device, the user and its authorizations are untouched');
});

test('a key limited to one profile changes nothing of another profile through any call that names a user, a device, a configuration or a token, and sees none of it', async (t) => {
  const portal = await startTestPortal({ config: twoProfiles });
  t.after(() => portal.close());
  const key = bearer(await makeAdminKey(portal, 'mdm', { scope: 'admin', profiles: ['employees'] }));
  const idOf = (response: ApiResponse) => {
    assert.equal(response.status, 200, response.text);
    return wireGuardPublicKey(parseWireGuardFile(response.text).interface.get('PrivateKey') as WireGuardKey);
  };
  // The user "mixt" has something of everything in both profiles, made with the secret.
  const laptop = idOf(await portal.post('/create', { user_id: 'mixt', profile_id: 'employees' }));
  const phone = idOf(await portal.post('/create', { user_id: 'mixt', profile_id: 'guests' }));
  const managed = await portal.admin.registerDevice({
    user_id: 'mixt',
    profile_id: 'employees',
    platform: 'windows',
    serial: 'E-1',
  });
  const staged = await portal.admin.registerDevice({
    user_id: 'mixt',
    profile_id: 'guests',
    platform: 'ios',
    serial: 'G-1',
  });
  const managedInGuests = idOf(
    await portal.post('/create', { user_id: 'mixt', profile_id: 'guests', device_id: managed.device_id }),
  );
  const guestsToken = await portal.admin.enrollmentToken({
    user_id: 'mixt',
    profile_id: 'guests',
    device_id: managed.device_id,
  });
  await authorize(portal, 'mixt', 'mixt-auth');

  const guests = 'key "mdm" may not use profile "guests" (it is limited to: employees)';
  const wholeUser =
    'key "mdm" may not change user "mixt" as a whole: the user has configurations in guests, enrollment tokens in guests and devices in guests, outside its profiles (employees)';
  const refusals: [string, Record<string, string>, string][] = [
    ['/create', { user_id: 'mixt', profile_id: 'guests' }, guests],
    ['/create', { user_id: 'mixt', profile_id: 'employees', device_id: staged.device_id }, guests],
    ['/create', { user_id: 'mixt', profile_id: 'employees', serial: 'G-1' }, guests],
    ['/enrollment_token', { user_id: 'mixt', profile_id: 'guests' }, guests],
    ['/enrollment_token', { user_id: 'mixt', profile_id: 'employees', device_id: staged.device_id }, guests],
    ['/register_device', { user_id: 'mixt', profile_id: 'guests', platform: 'ios', serial: 'G-2' }, guests],
    ['/delete_connection', { user_id: 'mixt', connection_id: phone }, guests],
    ['/delete_connection', { user_id: 'mixt', connection_id: managedInGuests }, guests],
    ['/extend', { user_id: 'mixt', connection_id: phone }, guests],
    ['/revoke_enrollment_token', { user_id: 'mixt', token_id: guestsToken.token_id }, guests],
    ['/retire_device', { device_id: staged.device_id }, guests],
    [
      '/retire_device',
      { device_id: managed.device_id },
      `key "mdm" may not retire device "${managed.device_id}": it has configurations in guests and enrollment tokens in guests, outside its profiles (employees)`,
    ],
    ['/disable_user', { user_id: 'mixt' }, wholeUser],
    ['/enable_user', { user_id: 'mixt' }, wholeUser],
    ['/destroy', { user_id: 'mixt' }, wholeUser],
    ['/delete_user_authorizations', { user_id: 'mixt' }, wholeUser],
  ];
  const before = await portalState(portal);
  for (const [path, form, message] of refusals) {
    const response = await portal.post(path, form, key);
    const cell = `${path} ${JSON.stringify(form)}`;
    assert.equal(response.status, 403, `${cell}: ${response.text}`);
    assert.equal(errorBody(response.text), message, cell);
    assert.deepEqual(await portalState(portal), before, `${cell}: nothing changed`);
  }

  // The serial of the user's device in guests is taken, but the answer does not name that device.
  const taken = await portal.post(
    '/register_device',
    { user_id: 'mixt', profile_id: 'employees', platform: 'ios', serial: 'G-1' },
    key,
  );
  assert.equal(taken.status, 409, taken.text);
  assert.equal(
    errorBody(taken.text),
    '"serial" is already registered to a device of this user outside the key\'s profiles; a key for its profile may retire it',
  );
  assert.deepEqual(await portalState(portal), before);

  // What it may do for the same user and device touches its own profile only.
  const guestsThings = async () => {
    const db = portal.portal.ctx.db;
    return {
      peers: await db
        .selectFrom('wg_peers')
        .selectAll()
        .where('profile_id', '=', 'guests')
        .orderBy('public_key')
        .execute(),
      tokens: await db.selectFrom('enrollment_tokens').selectAll().where('profile_id', '=', 'guests').execute(),
      devices: await db.selectFrom('devices').selectAll().where('profile_id', '=', 'guests').execute(),
    };
  };
  const guestsBefore = await guestsThings();
  const managedLaptop = idOf(
    await portal.post('/create', { user_id: 'mixt', profile_id: 'employees', device_id: managed.device_id }, key),
  );
  assert.equal(
    (await portal.post('/extend', { user_id: 'mixt', connection_id: laptop }, key)).status,
    200,
    'extend of its own configuration',
  );
  assert.deepEqual(await guestsThings(), guestsBefore);

  // And it sees only its own profile's part of the user and its devices.
  const shown = async (path: string, form: Record<string, string>) => {
    const response = await portal.get(path, form, key);
    assert.equal(response.status, 200, `${path}: ${response.text}`);
    return response.json() as Record<string, unknown>;
  };
  const configurations = (await shown('/user_configuration_list', { user_id: 'mixt' }))['user_configuration_list'] as {
    connection_id: string;
  }[];
  assert.deepEqual(configurations.map((entry) => entry.connection_id).sort(), [laptop, managedLaptop].sort());
  assert.deepEqual((await shown('/enrollment_tokens', { user_id: 'mixt' }))['enrollment_tokens'], []);
  const devices = (await shown('/devices', { user_id: 'mixt' }))['devices'] as {
    device_id: string;
    configurations: { connection_id: string }[];
  }[];
  assert.deepEqual(
    devices.map((device) => [device.device_id, device.configurations.map((entry) => entry.connection_id)]),
    [[managed.device_id, [managedLaptop]]],
  );
  const device = (await shown('/device', { device_id: managed.device_id }))['device'] as {
    configurations: { connection_id: string }[];
  };
  assert.deepEqual(
    device.configurations.map((entry) => entry.connection_id),
    [managedLaptop],
  );
  assert.equal((await portal.get('/device', { device_id: staged.device_id }, key)).status, 403);
  const lists = (await shown('/connection_list', { show_all: 'on' }))['connection_list'] as Record<
    string,
    { connection_id: string }[]
  >;
  assert.deepEqual(Object.keys(lists), ['employees']);
  assert.deepEqual(
    (lists['employees'] ?? []).map((entry) => entry.connection_id).sort(),
    [laptop, managedLaptop].sort(),
  );
  assert.deepEqual((await shown('/connected_users', { show_all: 'on' }))['connected_users'], { employees: ['mixt'] });
  // A receipt of a guests configuration (the secret deleted it) stays hidden.
  assert.equal((await portal.post('/delete_connection', { user_id: 'mixt', connection_id: phone })).status, 204);
  assert.deepEqual((await shown('/revocations', { user_id: 'mixt' }))['revocations'], []);
});

test('the OpenAPI document names the scope of every call, the Idempotency-Key header of every POST, and the extensions', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  const reader = await makeAdminKey(portal, 'reader', { scope: 'read' });
  const response = await portal.get('/openapi.json', {}, bearer(reader));
  assert.equal(response.status, 200, 'any valid key may read the document');
  const document = response.json() as {
    info: { description: string };
    'x-admin-key-scopes': Record<string, string[]>;
    paths: Record<
      string,
      Record<
        string,
        {
          security: Record<string, string[]>[];
          'x-required-scope': string;
          parameters?: { name: string; in: string }[];
          responses: Record<string, unknown>;
        }
      >
    >;
  };
  for (const call of Object.values(NAMES)) {
    const operation = document.paths[call.path]?.[call.method.toLowerCase()];
    assert.ok(operation !== undefined, call.path);
    assert.equal(operation['x-required-scope'], call.scope, call.path);
    assert.deepEqual(operation.security, [{ adminApiKey: [call.scope] }], call.path);
    const header = operation.parameters?.find((parameter) => parameter.in === 'header');
    assert.equal(header?.name, call.method === 'POST' ? 'Idempotency-Key' : undefined, call.path);
    if (call.method === 'POST')
      assert.ok(operation.responses['422'] !== undefined && operation.responses['409'] !== undefined, call.path);
  }
  assert.deepEqual(document['x-admin-key-scopes'], {
    read: [
      'connected_users',
      'connection_list',
      'users',
      'disabled_users',
      'user_configuration_list',
      'connection_log',
      'attribution',
      'stats',
      'profiles',
      'enrollment_tokens',
      'revocation',
      'revocations',
      'devices',
      'device',
    ],
    write: [
      'connected_users',
      'connection_list',
      'users',
      'disabled_users',
      'user_configuration_list',
      'create',
      'disable_user',
      'enable_user',
      'delete_connection',
      'connection_log',
      'attribution',
      'stats',
      'profiles',
      'extend',
      'enrollment_token',
      'enrollment_tokens',
      'revoke_enrollment_token',
      'revocation',
      'revocations',
      'register_device',
      'devices',
      'device',
      'retire_device',
      'suspend_device',
      'resume_device',
    ],
    admin: Object.keys(NAMES),
  });
  assert.match(document.info.description, /admin keys/);
  assert.match(document.info.description, /audit_log/);
  assert.match(document.info.description, /Idempotency-Key/);
});
