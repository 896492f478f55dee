// Changes made in the console. Each first shows a confirmation page that says what it will do
// ("disable alice: 3 configurations will be cut, 1 session open now on node 1"), whose form
// (with the session's CSRF token) makes the change through the Admin API's route as the signed-in
// key. A refusal names the limit (scope or profile). The file and the private key a new
// configuration carries are in that one answer only (never cached, never stored).
import { callerKey } from '../../core/admin-call.js';
import QRCode from 'qrcode';
import type { ConnectionInfo, ConnectionLogEntry, DeviceInfo, UserConfiguration } from '../../protocol/admin-api.js';
import type { AdminRoute, RouteAnswer } from '../admin-api/admin-route.js';
import type { ParamsSchema } from '../../protocol/admin-api-params.js';
import { adminKeysRoute, createAdminKeyRoute, revokeAdminKeyRoute } from '../admin-api/routes/access/admin-keys.js';
import { connectionListRoute } from '../admin-api/routes/listings/connection-list.js';
import { connectionLogRoute } from '../admin-api/routes/sessions/connection-log.js';
import { createRoute } from '../admin-api/routes/issuing/create.js';
import {
  deviceRoute,
  resumeDeviceRoute,
  retireDeviceRoute,
  suspendDeviceRoute,
} from '../admin-api/routes/devices/devices.js';
import { deleteConnectionRoute } from '../admin-api/routes/users/delete-connection.js';
import { destroyRoute } from '../admin-api/routes/users/destroy.js';
import { disableUserRoute } from '../admin-api/routes/users/disable-user.js';
import { enableUserRoute } from '../admin-api/routes/users/enable-user.js';
import { enrollmentTokenRoute } from '../admin-api/routes/enrollment/enrollment-token.js';
import { revokeEnrollmentTokenRoute } from '../admin-api/routes/enrollment/revoke-enrollment-token.js';
import { userConfigurationListRoute } from '../admin-api/routes/users/user-configuration-list.js';
import { ENROLL_PATH, type CallAnswer } from '../../protocol/admin-api.js';
import { ConsoleRefusal, answerValue, callRoute, readAnswer } from './calls.js';
import { html, type Html } from './html.js';
import { csrfField, DIRECTORY_INACTIVE, problem, sealedDoneAddress, type DoneNote } from './layout.js';
import type { ConsolePage, ConsoleRequest, PageResult } from './console-request.js';
import { userStateOf } from './user-state.js';

interface Action<A extends CallAnswer = CallAnswer> {
  readonly route: AdminRoute<ParamsSchema, A>;
  /** The form fields the call takes. */
  readonly fields: readonly string[];
  /** What the change will do, in a sentence, from what the portal knows now. */
  describe(request: ConsoleRequest, values: Readonly<Record<string, string>>): Promise<string>;
  /** Where to go once done (a page with a note), unless `result` shows the answer itself. */
  readonly after?: (values: Readonly<Record<string, string>>) => string;
  /** Shows the answer itself (the file, the token, the key: each shown this once), of the route's answer type. */
  result?(
    request: ConsoleRequest,
    values: Readonly<Record<string, string>>,
    answer: RouteAnswer<A>,
  ): Promise<PageResult>;
}

/** An action typed by its route's answer, listed with the others. */
function action<A extends CallAnswer>(definition: Action<A>): Action {
  return definition;
}

/** What a user's configurations are, which of them are connected now (the nodes' live answer) and the open sessions the log knows (with their node). */
async function reachOf(
  request: ConsoleRequest,
  userId: string,
): Promise<{ configurations: UserConfiguration[]; online: ConnectionInfo[]; open: ConnectionLogEntry[] }> {
  const { ctx, frame } = request;
  const list = await readAnswer(ctx, frame.caller, request.request, userConfigurationListRoute, {
    user_id: userId,
  });
  const live = await readAnswer(ctx, frame.caller, request.request, connectionListRoute);
  const log = await readAnswer(ctx, frame.caller, request.request, connectionLogRoute, {
    user_id: userId,
    open: 'yes',
    limit: '1000',
  });
  const online = Object.values(live.connection_list).flatMap((entries) =>
    entries.filter((entry) => entry.user_id === userId),
  );
  return { configurations: list.user_configuration_list, online, open: log.connection_log };
}

function plural(count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`;
}

/** "1 connection open now (node 0) will end": the live list counts, the log names the nodes it knows. */
function sessionsText(online: readonly ConnectionInfo[], open: readonly ConnectionLogEntry[]): string {
  const count = Math.max(online.length, open.length);
  if (count === 0) return 'no connection is open now';
  const nodes = [...new Set(open.map((entry) => entry.node_number))].sort((a, b) => a - b);
  return `${plural(count, 'connection', 'connections')} open now${nodes.length === 0 ? '' : ` (${nodes.length === 1 ? 'node' : 'nodes'} ${nodes.join(', ')})`} will end`;
}

function userPage(userId: string, done: DoneNote): string {
  return `user?${new URLSearchParams({ user_id: userId, done }).toString()}`;
}

function devicePage(deviceId: string, done?: DoneNote): string {
  return `device?${new URLSearchParams({ device_id: deviceId, ...(done === undefined ? {} : { done }) }).toString()}`;
}

/** A device as its confirmation names it: its id and the identifier its MDM knows it by. */
function deviceName(device: DeviceInfo): string {
  const known =
    device.serial === null
      ? device.mdm_id === null
        ? ''
        : ` (MDM id ${device.mdm_id})`
      : ` (serial ${device.serial})`;
  return `device ${device.device_id}${known} of ${device.user_id}`;
}

/**
 * ", suspended since … (reason, by …)" for a resume's confirmation, with the other reasons that
 * stand: the administrator's resume ends them all.
 */
function suspensionText(device: DeviceInfo): string {
  const suspension = device.suspension;
  if (suspension === null) return '';
  const shown = `, suspended since ${suspension.since} (${suspension.reason}, by ${suspension.by})`;
  const others = suspension.other_reasons.map((other) => `${other.reason} (by ${other.by})`);
  return others.length === 0 ? shown : `${shown} and also for ${others.join(', ')}, which this resume ends too`;
}

/** A device's configurations (those the caller sees), which of them are connected now, and their open sessions in the log. */
async function deviceReachOf(
  request: ConsoleRequest,
  deviceId: string,
): Promise<{ device: DeviceInfo; online: ConnectionInfo[]; open: ConnectionLogEntry[]; profiles: string }> {
  const { ctx, frame } = request;
  const { device } = await readAnswer(ctx, frame.caller, request.request, deviceRoute, { device_id: deviceId });
  const ids = new Set(device.configurations.map((configuration) => configuration.connection_id));
  const open: ConnectionLogEntry[] = [];
  let online: ConnectionInfo[] = [];
  if (ids.size > 0) {
    const live = await readAnswer(ctx, frame.caller, request.request, connectionListRoute);
    online = Object.values(live.connection_list).flatMap((entries) =>
      entries.filter((entry) => ids.has(entry.connection_id)),
    );
    for (const connectionId of ids) {
      const log = await readAnswer(ctx, frame.caller, request.request, connectionLogRoute, {
        connection_id: connectionId,
        open: 'yes',
        limit: '1000',
      });
      open.push(...log.connection_log);
    }
  }
  const profiles = [...new Set(device.configurations.map((configuration) => configuration.profile_id))];
  return { device, online, open, profiles: profiles.length === 0 ? '' : ` (${profiles.join(', ')})` };
}

const ACTIONS: Readonly<Record<string, Action>> = {
  disable_user: action({
    route: disableUserRoute,
    fields: ['user_id'],
    async describe(request, { user_id = '' }) {
      const { configurations, online, open } = await reachOf(request, user_id);
      const profiles = [...new Set(configurations.map((configuration) => configuration.profile_id))];
      return `Disable ${user_id}: ${plural(configurations.length, 'configuration', 'configurations')}${
        profiles.length === 0 ? '' : ` (${profiles.join(', ')})`
      } will be cut from the nodes and ${sessionsText(online, open)}. The user cannot connect until enabled again.`;
    },
    after: ({ user_id = '' }) => userPage(user_id, 'disabled'),
  }),
  enable_user: action({
    route: enableUserRoute,
    fields: ['user_id'],
    async describe(request, { user_id = '' }) {
      const { configurations } = await reachOf(request, user_id);
      const state = await userStateOf(request.ctx, request.frame.caller, request.request, user_id);
      // enable_user would answer 409: the confirmation offers no button, and says why.
      if (state.directoryInactive) throw new ConsoleRefusal(409, DIRECTORY_INACTIVE);
      return `Enable ${user_id}: the user can connect again with ${plural(configurations.length, 'configuration', 'configurations')}.`;
    },
    after: ({ user_id = '' }) => userPage(user_id, 'enabled'),
  }),
  destroy: action({
    route: destroyRoute,
    fields: ['user_id'],
    async describe(request, { user_id = '' }) {
      const { configurations, online, open } = await reachOf(request, user_id);
      return `Delete ${user_id} for good: ${plural(configurations.length, 'configuration', 'configurations')}, the user's devices and enrollment tokens are deleted and ${sessionsText(online, open)}. This cannot be undone.`;
    },
    after: ({ user_id = '' }) => `users?${new URLSearchParams({ done: 'deleted', user_id }).toString()}`,
  }),
  delete_connection: action({
    route: deleteConnectionRoute,
    fields: ['user_id', 'connection_id'],
    async describe(request, { user_id = '', connection_id = '' }) {
      const { configurations, online, open } = await reachOf(request, user_id);
      const configuration = configurations.find((entry) => entry.connection_id === connection_id);
      const sessions = open.filter((entry) => entry.connection_id === connection_id);
      const connected = online.filter((entry) => entry.connection_id === connection_id);
      return `Delete the configuration ${configuration === undefined ? connection_id : `"${configuration.display_name}" (${configuration.profile_id})`} of ${user_id}: it is cut from its node and ${sessionsText(connected, sessions)}.`;
    },
    after: ({ user_id = '' }) => userPage(user_id, 'configuration-deleted'),
  }),
  // The Online page's button. A WireGuard or OpenVPN client connects again by itself, so a
  // session ends for good only with what it uses: this deletes the configuration.
  disconnect: action({
    route: deleteConnectionRoute,
    fields: ['user_id', 'connection_id'],
    async describe(request, { user_id = '', connection_id = '' }) {
      const { configurations } = await reachOf(request, user_id);
      const configuration = configurations.find((entry) => entry.connection_id === connection_id);
      return `Disconnect ${user_id}'s ${configuration === undefined ? connection_id : `"${configuration.display_name}" (${configuration.profile_id})`}: its configuration is deleted and cut from its node, because a VPN client reconnects by itself. The device needs a new configuration to connect again; to cut ${user_id} off for a while instead, disable the user.`;
    },
    after: () => `connections?${new URLSearchParams({ done: 'disconnected' }).toString()}`,
  }),
  suspend_device: action({
    route: suspendDeviceRoute,
    fields: ['device_id', 'reason'],
    async describe(request, { device_id = '', reason = 'administrator' }) {
      const { device, online, open, profiles } = await deviceReachOf(request, device_id);
      if (device.state === 'suspended')
        return `Suspend ${deviceName(device)}: it is suspended already (${device.suspension?.reason ?? ''}); nothing changes.`;
      return `Suspend ${deviceName(device)} (reason: ${reason}): ${plural(device.configurations.length, 'configuration', 'configurations')}${profiles} will be cut from the nodes and ${sessionsText(online, open)}. They are kept: the device connects again once resumed.`;
    },
    after: ({ device_id = '' }) => devicePage(device_id, 'device-suspended'),
  }),
  resume_device: action({
    route: resumeDeviceRoute,
    fields: ['device_id'],
    async describe(request, { device_id = '' }) {
      const { device, profiles } = await deviceReachOf(request, device_id);
      return `Resume ${deviceName(device)}${suspensionText(device)}: ${plural(device.configurations.length, 'configuration', 'configurations')}${profiles} ${device.configurations.length === 1 ? 'goes back on its node' : 'go back on their nodes'} (not one that expired meanwhile, and none while ${device.user_id} is disabled).`;
    },
    after: ({ device_id = '' }) => devicePage(device_id, 'device-resumed'),
  }),
  retire_device: action({
    route: retireDeviceRoute,
    fields: ['device_id'],
    async describe(request, { device_id = '' }) {
      const { device, online, open, profiles } = await deviceReachOf(request, device_id);
      return `Retire ${deviceName(device)} for good: ${plural(device.configurations.length, 'configuration', 'configurations')}${profiles} will be deleted and cut from the nodes, its enrollment tokens revoked, and ${sessionsText(online, open)}. This cannot be undone; its serial and MDM id may be registered again, as a new device.`;
    },
    after: ({ device_id = '' }) => devicePage(device_id, 'device-retired'),
  }),
  create: action({
    route: createRoute,
    fields: ['user_id', 'profile_id', 'display_name', 'expires_in'],
    async describe(_request, { user_id = '', profile_id = '', expires_in = '' }) {
      return `Issue a configuration for ${user_id} in profile ${profile_id}${expires_in === '' ? '' : `, valid for ${expires_in}`}. Its file and QR code are shown once, on the next page: the portal does not keep the private key.`;
    },
    async result(request, { user_id = '' }, answer) {
      const text = typeof answer.body === 'string' ? answer.body : Buffer.from(answer.body).toString('utf8');
      const type = answer.headers['content-type'] ?? 'text/plain';
      const disposition = /filename="([^"]+)"/.exec(answer.headers['content-disposition'] ?? '')?.[1];
      const fileName =
        disposition ??
        `${user_id.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 40) || 'vpn'}${type.includes('openvpn') ? '.ovpn' : '.conf'}`;
      const qr = await qrCode(text);
      const download = `data:${type.split(';')[0] ?? 'text/plain'};base64,${Buffer.from(text).toString('base64')}`;
      return {
        title: `Configuration for ${user_id}`,
        body: html`<p class="notice" role="status">Issued. This page is the only time the file and its private key are shown; the portal does not keep them.</p>
<p><a href="${download}" download="${fileName}" class="button">Download ${fileName}</a></p>
${qr}
<details><summary>The file as text</summary><pre class="config">${text}</pre></details>
<p><a href="${request.frame.base}user?${new URLSearchParams({ user_id }).toString()}">Back to ${user_id}</a></p>`,
      };
    },
  }),
  enrollment_token: action({
    route: enrollmentTokenRoute,
    fields: ['user_id', 'profile_id', 'valid_for', 'uses'],
    async describe(_request, { user_id = '', profile_id = '', valid_for = '', uses = '' }) {
      return `Make an enrollment token for ${user_id} in profile ${profile_id}: it can make ${uses || '1'} configuration(s) and be redeemed for ${valid_for || 'PT1H'}. It is shown once, with its QR code.`;
    },
    async result(request, { user_id = '' }, answer) {
      const token = answerValue(enrollmentTokenRoute.answer, answer);
      const enrollUrl = new URL(
        ENROLL_PATH,
        request.ctx.config.baseUrl.href.endsWith('/')
          ? request.ctx.config.baseUrl
          : `${request.ctx.config.baseUrl.href}/`,
      ).href;
      return {
        title: `Enrollment token for ${user_id}`,
        body: html`<p class="notice" role="status">Made. The token is shown this once; the portal keeps only a keyed hash of it.</p>
<dl><dt>Token</dt><dd class="id" id="enrollment-token">${token.enrollment_token}</dd><dt>Redeem at</dt><dd>${enrollUrl}</dd><dt>Until</dt><dd>${token.expires_at}</dd><dt>Uses</dt><dd>${token.uses}</dd></dl>
${await qrCode(token.enrollment_token)}
<p><a href="${request.frame.base}user?${new URLSearchParams({ user_id }).toString()}">Back to ${user_id}</a></p>`,
      };
    },
  }),
  revoke_enrollment_token: action({
    route: revokeEnrollmentTokenRoute,
    fields: ['user_id', 'token_id'],
    async describe(_request, { user_id = '', token_id = '' }) {
      return `Revoke the enrollment token ${token_id} of ${user_id}: it can no longer be redeemed; configurations it made stay.`;
    },
    after: () => 'tokens',
  }),
  create_admin_key: action({
    route: createAdminKeyRoute,
    fields: ['name', 'scope', 'profiles', 'expires_in', 'allow_list'],
    async describe(_request, { name = '', scope = 'read', profiles, expires_in, allow_list }) {
      return `Make the admin key "${name}" with scope ${scope}, for ${profiles === undefined ? 'every profile' : `the profiles ${profiles}`}, ${
        expires_in === undefined ? 'never expiring' : `expiring after ${expires_in}`
      }, usable from ${allow_list === undefined ? 'anywhere adminApi.allowList allows' : allow_list}. The key is shown once, on the next page: the portal keeps only a keyed hash of it.`;
    },
    async result(request, _values, answer) {
      const made = answerValue(createAdminKeyRoute.answer, answer);
      return {
        title: `Admin key ${made.admin_key.name}`,
        body: html`<p class="notice" role="status">Made. This page is the only time the key is shown; store it now.</p>
<dl><dt>Key</dt><dd class="id" id="admin-key-secret">${made.secret}</dd><dt>Scope</dt><dd>${made.admin_key.scope}</dd><dt>Profiles</dt><dd>${
          made.admin_key.profiles?.join(', ') ?? 'all'
        }</dd><dt>Expires</dt><dd>${made.admin_key.expires_at ?? 'never'}</dd></dl>
<p><a href="${request.frame.base}keys">Back to the admin keys</a></p>`,
      };
    },
  }),
  revoke_admin_key: action({
    route: revokeAdminKeyRoute,
    fields: ['name'],
    async describe(request, { name = '' }) {
      const { ctx, frame } = request;
      const keys = (await readAnswer(ctx, frame.caller, request.request, adminKeysRoute)).admin_keys;
      const live = keys.filter((key) => key.name === name && (key.state === 'active' || key.state === 'rotated'));
      const yourself =
        callerKey(frame.caller)?.name === name ? ' This is the key you signed in with: your session ends too.' : '';
      return `Revoke the admin key "${name}": ${plural(live.length, 'key', 'keys')} of that name stop working at once, on every portal instance, and console sessions signed in with them end. This cannot be undone.${yourself}`;
    },
    after: () => 'keys',
  }),
};

async function qrCode(text: string): Promise<Html> {
  try {
    const image = await QRCode.toDataURL(text, { errorCorrectionLevel: 'L', margin: 4, scale: 4 });
    return html`<figure><img src="${image}" alt="QR code of the above, for a phone's VPN app" class="qr" id="qr"><figcaption>Scan with the app on the phone.</figcaption></figure>`;
  } catch {
    return html`<p class="hint">Too long for a QR code: use the download.</p>`;
  }
}

function valuesOf(action: Action, query: Readonly<Record<string, string>>): Record<string, string> {
  const values: Record<string, string> = {};
  for (const field of action.fields) {
    const value = query[field];
    if (value !== undefined && value !== '') values[field] = value;
  }
  return values;
}

function actionOf(request: ConsoleRequest): [string, Action] | null {
  const name = request.query['action'] ?? '';
  const action = Object.hasOwn(ACTIONS, name) ? ACTIONS[name] : undefined;
  return action === undefined ? null : [name, action];
}

/** GET confirm?action=…: what the change will do, and the form that makes it. */
const confirmPage: ConsolePage = async (request) => {
  const found = actionOf(request);
  if (found === null) return { title: 'Unknown change', body: problem(400, 'There is no such change.'), status: 400 };
  const [name, action] = found;
  const values = valuesOf(action, request.query);
  let sentence: string;
  try {
    sentence = await action.describe(request, values);
  } catch (error) {
    if (error instanceof ConsoleRefusal)
      return { title: 'Confirm', body: problem(error.status, error.message), status: error.status };
    throw error;
  }
  const { base } = request.frame;
  return {
    title: 'Confirm',
    body: html`<form method="post" action="${base}do" class="confirm">${csrfField(request.frame)}<input type="hidden" name="action" value="${name}">${Object.entries(
      values,
    ).map(
      ([field, value]) => html`<input type="hidden" name="${field}" value="${value}">`,
    )}<p id="what">${sentence}</p><button type="submit" aria-describedby="what">Yes, ${name.replace(/_/g, ' ')}</button> <a href="${base}${cancelPath(name, values)}">Cancel</a></form>`,
  };
};

/** Where Cancel leads: the page the change was started from. */
function cancelPath(name: string, values: Readonly<Record<string, string>>): string {
  if (name.endsWith('_admin_key')) return 'keys';
  if (values['device_id'] !== undefined) return devicePage(values['device_id']);
  return values['user_id'] === undefined
    ? ''
    : `user?${new URLSearchParams({ user_id: values['user_id'] }).toString()}`;
}

/** POST do: makes the change (the guard checked the session and its CSRF token). */
const doAction: ConsolePage = async (request) => {
  const found = actionOf(request);
  if (found === null) return { title: 'Unknown change', body: problem(400, 'There is no such change.'), status: 400 };
  const [, action] = found;
  const values = valuesOf(action, request.query);
  try {
    const answer = await callRoute(request.ctx, request.frame.caller, request.request, action.route, values, {
      headers: { accept: '*/*' },
    });
    if (action.result !== undefined) return await action.result(request, values, answer);
    return { redirect: sealedDoneAddress(request.frame, action.after?.(values) ?? '') };
  } catch (error) {
    if (error instanceof ConsoleRefusal)
      return { title: 'Not done', body: problem(error.status, error.message), status: error.status };
    throw error;
  }
};

/** GET pages of the changes. */
export const actionPages: Readonly<Record<string, ConsolePage>> = { confirm: confirmPage };
/** POST: the changes themselves. */
export const actionHandlers: Readonly<Record<string, ConsolePage>> = { do: doAction };
