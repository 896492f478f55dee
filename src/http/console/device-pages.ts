// The console's Devices pages: managed devices found by serial, MDM id, user, state or platform
// (GET /devices, paged by the portal), and one device's page: who it is (its certificate), what
// happened to it (its history, with reasons), its configurations and their sessions, and the
// suspend, resume and retire buttons that lead to a confirmation. Every read goes through the
// Admin API's calls as the signed-in key, so a key limited to profiles sees only their devices.
import type { ConnectionLogEntry, DeviceHistoryEntryInfo, DeviceInfo } from '../../protocol/admin-api.js';
import { DEVICE_STATES } from '../../shared/device-states.js';
import { PLATFORMS } from '../../shared/platforms.js';
import { deviceRoute, devicesRoute } from '../admin-api/routes/devices/devices.js';
import { connectionLogRoute } from '../admin-api/routes/sessions/connection-log.js';
import { ConsoleRefusal, readAnswer } from './calls.js';
import { html, type Html } from './html.js';
import { doneNote, may, problem, table } from './layout.js';
import type { ConsolePage, ConsoleRequest, PageResult } from './console-request.js';
import { link, logTable, section, userLink } from './pages.js';

/** Devices per page of the devices list. */
const DEVICES_PAGE = 50;
/** Sessions shown on a device's page, newest first. */
const DEVICE_SESSIONS = 20;

/** The search fields of the devices list, each a filter of GET /devices. */
const SEARCH_FIELDS = ['serial', 'mdm_id', 'user_id', 'state', 'platform'] as const;

export function deviceLink(base: string, deviceId: string): Html {
  return link(base, 'device', { device_id: deviceId }, deviceId);
}

async function devices(r: ConsoleRequest): Promise<PageResult> {
  const { ctx, frame, request, query } = r;
  const { base } = frame;
  const filters: Record<string, string> = {};
  for (const name of SEARCH_FIELDS) {
    const value = query[name]?.trim();
    if (value !== undefined && value !== '') filters[name] = value;
  }
  const after = query['after'] ?? '';
  const body = await section(async () => {
    const page = await readAnswer(ctx, frame.caller, request, devicesRoute, {
      ...filters,
      limit: String(DEVICES_PAGE),
      ...(after === '' ? {} : { cursor: after }),
    });
    const rows = page.devices.map(
      (device) =>
        html`<tr><td class="id">${deviceLink(base, device.device_id)}</td><td>${userLink(base, device.user_id)}</td><td>${device.platform}</td><td>${device.profile_id}</td><td>${device.serial ?? ''}</td><td>${device.mdm_id ?? ''}</td><td>${stateText(device)}</td><td>${device.last_seen_at ?? 'never'}</td></tr>`,
    );
    return html`${table('Devices, newest first', ['Device', 'User', 'Platform', 'Profile', 'Serial', 'MDM id', 'State', 'Last seen'], rows, 'No devices match.')}${
      page.next_cursor === null
        ? ''
        : html`<p>${link(base, 'devices', { ...filters, after: page.next_cursor }, 'Next page')}</p>`
    }`;
  });
  const text = (name: string, label: string) =>
    html`<span class="field"><label for="d-${name}">${label}</label><input id="d-${name}" name="${name}" value="${filters[name] ?? ''}"></span>`;
  const choice = (name: string, label: string, values: readonly string[]) =>
    html`<span class="field"><label for="d-${name}">${label}</label><select id="d-${name}" name="${name}"><option value="">any</option>${values.map(
      (value) => html`<option value="${value}"${filters[name] === value ? html` selected` : ''}>${value}</option>`,
    )}</select></span>`;
  return {
    title: 'Devices',
    body: html`<form method="get" action="${base}devices" class="filters" role="search">${text('serial', 'Serial number')}${text(
      'mdm_id',
      'MDM id',
    )}${text('user_id', 'User')}${choice('state', 'State', DEVICE_STATES)}${choice(
      'platform',
      'Platform',
      PLATFORMS,
    )}<button type="submit">Search</button></form>${body}`,
  };
}

/** "suspended (lost, since …, by …; also jamf-group, since …, by …)": the state, and while suspended why. */
function stateText(device: DeviceInfo): string {
  const suspension = device.suspension;
  if (suspension === null) return device.state;
  const also = suspension.other_reasons.map((other) => `; also ${other.reason}, since ${other.since}, by ${other.by}`);
  return `${device.state} (${suspension.reason}, since ${suspension.since}, by ${suspension.by}${also.join('')})`;
}

async function device(r: ConsoleRequest): Promise<PageResult> {
  const { ctx, frame, request, query } = r;
  const deviceId = query['device_id'] ?? '';
  let answer: { device: DeviceInfo; history: DeviceHistoryEntryInfo[] };
  try {
    answer = await readAnswer(ctx, frame.caller, request, deviceRoute, { device_id: deviceId });
  } catch (error) {
    if (error instanceof ConsoleRefusal)
      return { title: 'Device', body: problem(error.status, error.message), status: error.status };
    throw error;
  }
  const shown = answer.device;
  const sessions = await section(async () => logTable(frame.base, await sessionsOf(r, shown)));
  return {
    title: `Device ${shown.serial ?? shown.mdm_id ?? shown.device_id}`,
    body: html`${doneNote(r.frame, query, shown.device_id)}<p>State: <strong id="device-state">${stateText(shown)}</strong></p>${actions(r, shown)}
<section aria-labelledby="identity"><h2 id="identity">Identity</h2>${identity(r, shown)}</section>
<section aria-labelledby="history"><h2 id="history">History</h2>${historyTable(answer.history)}</section>
<section aria-labelledby="configurations"><h2 id="configurations">Configurations</h2>${table(
      'Configurations',
      ['Profile', 'Protocol', 'Expires', 'Connection id'],
      shown.configurations.map(
        (configuration) =>
          html`<tr><td>${configuration.profile_id}</td><td>${configuration.vpn_proto}</td><td>${configuration.expires_at}</td><td class="id">${configuration.connection_id}</td></tr>`,
      ),
      shown.state === 'retired' ? 'None: retiring deleted them.' : 'No configurations.',
    )}</section>
<section aria-labelledby="sessions"><h2 id="sessions">Latest sessions</h2>${sessions}</section>`,
  };
}

/** The changes the session's scope allows in the device's state: each leads to its confirmation. */
function actions({ frame }: ConsoleRequest, shown: DeviceInfo): Html {
  if (!may(frame, 'write') || shown.state === 'retired') return html``;
  const { base } = frame;
  const suspend =
    shown.state === 'suspended'
      ? html`<p class="actions">${link(base, 'confirm', { action: 'resume_device', device_id: shown.device_id }, 'Resume…')}</p>`
      : html`<form method="get" action="${base}confirm" class="filters"><input type="hidden" name="action" value="suspend_device"><input type="hidden" name="device_id" value="${shown.device_id}"><span class="field"><label for="suspend-reason">Reason</label><input id="suspend-reason" name="reason" value="administrator" maxlength="200"></span><button type="submit">Suspend…</button></form>`;
  return html`${suspend}<p class="actions">${link(base, 'confirm', { action: 'retire_device', device_id: shown.device_id }, 'Retire…')}</p>`;
}

function identity({ ctx, frame }: ConsoleRequest, shown: DeviceInfo): Html {
  const certificate = shown.certificate;
  const tenant = ctx.config.enrollment.clientCertificate?.intuneTenantId ?? null;
  const proof =
    certificate === null
      ? html`<dt>Proves itself with</dt><dd>an enrollment token or an administrator's call (no certificate)</dd>`
      : html`<dt>Proves itself with</dt><dd>its MDM certificate</dd><dt>Certificate subject</dt><dd class="id">${certificate.subject}</dd><dt>Issuer</dt><dd class="id">${certificate.issuer}</dd><dt>Certificate serial</dt><dd class="id">${certificate.serial_number}</dd><dt>Valid until</dt><dd>${certificate.not_after}</dd><dt>Tenant</dt><dd>${
          tenant === null
            ? 'not checked (enrollment.clientCertificate.intuneTenantId is not set)'
            : `Intune tenant ${tenant}: every enrollment requires it (enrollment.clientCertificate.intuneTenantId)`
        }</dd>`;
  return html`<dl class="identity"><dt>Device id</dt><dd class="id">${shown.device_id}</dd><dt>User</dt><dd>${userLink(frame.base, shown.user_id)}</dd><dt>Profile</dt><dd>${shown.profile_id}</dd><dt>Platform</dt><dd>${shown.platform}</dd><dt>Serial number</dt><dd class="id">${shown.serial ?? '—'}</dd><dt>MDM id</dt><dd class="id">${shown.mdm_id ?? '—'}</dd>${proof}<dt>Registered</dt><dd>${shown.created_at}</dd><dt>Last seen</dt><dd>${shown.last_seen_at ?? 'never'}</dd>${
    shown.retired_at === null ? '' : html`<dt>Retired</dt><dd>${shown.retired_at}</dd>`
  }</dl>`;
}

function historyTable(history: readonly DeviceHistoryEntryInfo[]): Html {
  return table(
    'Changes of its state, oldest first',
    ['When', 'Change', 'State', 'Reason', 'By', 'Revocation receipt'],
    history.map(
      (entry) =>
        html`<tr><td>${entry.at}</td><td>${entry.change}</td><td>${entry.state_before === null ? '' : `${entry.state_before} → `}${entry.state_after}</td><td>${entry.reason ?? ''}</td><td>${entry.by ?? 'not recorded'}</td><td class="id">${entry.revocation_id ?? ''}</td></tr>`,
    ),
    'No changes recorded.',
  );
}

/** The latest sessions of the device's configurations (the log keeps them by configuration), newest first. */
async function sessionsOf({ ctx, frame, request }: ConsoleRequest, shown: DeviceInfo): Promise<ConnectionLogEntry[]> {
  const entries: ConnectionLogEntry[] = [];
  for (const configuration of shown.configurations) {
    const log = await readAnswer(ctx, frame.caller, request, connectionLogRoute, {
      connection_id: configuration.connection_id,
      limit: String(DEVICE_SESSIONS),
    });
    entries.push(...log.connection_log);
  }
  return entries.sort((a, b) => b.connected_at.localeCompare(a.connected_at)).slice(0, DEVICE_SESSIONS);
}

export const devicePages: Readonly<Record<string, ConsolePage>> = { devices, device };
