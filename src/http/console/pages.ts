// The console's pages (GET): each reads through the Admin API's route definitions as the
// signed-in key, so a page shows exactly what the key may see (its profiles only, for a key
// limited to some). A read the key may not make says which limit, in place of its section.
// Lists page through the API (users by prefix, the connection log by address and moment).
import { KEY_SCOPES, type AuditLogPage, type ConnectionLogEntry } from '../../protocol/admin-api.js';
import { callerProfiles } from '../../core/admin-call.js';
import { wireGuardPoolUse } from '../../core/nodes/index.js';
import { adminKeysRoute } from '../admin-api/routes/access/admin-keys.js';
import { auditLogRoute } from '../admin-api/routes/access/audit-log.js';
import { connectionListRoute } from '../admin-api/routes/listings/connection-list.js';
import { connectionLogRoute } from '../admin-api/routes/sessions/connection-log.js';
import { devicesRoute } from '../admin-api/routes/devices/devices.js';
import { disabledUsersRoute } from '../admin-api/routes/listings/disabled-users.js';
import { enrollmentTokensRoute } from '../admin-api/routes/enrollment/enrollment-tokens.js';
import { profilesRoute } from '../admin-api/routes/listings/profiles.js';
import { statsRoute } from '../admin-api/routes/sessions/stats.js';
import { userConfigurationListRoute } from '../admin-api/routes/users/user-configuration-list.js';
import { usersRoute } from '../admin-api/routes/listings/users.js';
import { webhookDeliveriesRoute, webhooksRoute } from '../admin-api/routes/webhooks/webhooks.js';
import { ConsoleRefusal, readAnswer } from './calls.js';
import { html, jsonIsland, type Html } from './html.js';
import { DIRECTORY_INACTIVE, doneNote, may, mayCall, problem, table, timeHint, zoneField } from './layout.js';
import type { ConsolePage, ConsoleRequest, PageResult } from './console-request.js';
import { describeBytes } from '../../shared/limited-body.js';
import { lastReconcile } from './reconcile-times.js';
import { abuseLookup } from './abuse-lookup.js';
import { userStateOf } from './user-state.js';
import { knownZone, readConsoleTime } from './local-time.js';

/** Users per page of the users list. */
const USERS_PAGE = 50;
const DAY_MS = 86_400_000;

/** A section whose read was refused shows why, and the rest of the page stands. */
export async function section(build: () => Promise<Html>): Promise<Html> {
  try {
    return await build();
  } catch (error) {
    if (error instanceof ConsoleRefusal) return problem(error.status, error.message);
    throw error;
  }
}

/**
 * The section a page is for: when its read is refused, the page answers with the refusal's
 * status (a link followed, a bookmark or a script sees 403, not 200), and the rest of the page
 * (its filters) stands.
 */
async function mainSection(build: () => Promise<Html>): Promise<{ readonly body: Html; readonly status: number }> {
  try {
    return { body: await build(), status: 200 };
  } catch (error) {
    if (error instanceof ConsoleRefusal) return { body: problem(error.status, error.message), status: error.status };
    throw error;
  }
}

export function userLink(base: string, userId: string): Html {
  return html`<a href="${base}user?${new URLSearchParams({ user_id: userId }).toString()}">${userId}</a>`;
}

export function link(base: string, page: string, query: Record<string, string>, label: string): Html {
  return html`<a href="${base}${page}?${new URLSearchParams(query).toString()}">${label}</a>`;
}

async function dashboard(r: ConsoleRequest): Promise<PageResult> {
  const nodes = await section(() => nodesSection(r));
  const pools = await section(() => poolsTable(r));
  const online = await section(() => sessionsTable(r));
  // Read only when the session may: a read bound to be refused would put a refusal the person
  // never asked for in the audit log at every look at the dashboard.
  const issued = mayCall(r.frame, auditLogRoute)
    ? await section(() => issuedToday(r))
    : html`<p class="hint">Configurations issued and revoked today come from the audit log, which needs scope admin for every profile.</p>`;
  const chart = await section(() => usageChart(r));
  return {
    title: 'Dashboard',
    body: html`${nodes}<section aria-labelledby="pools"><h2 id="pools">Address pools</h2>${pools}</section>
<section aria-labelledby="online"><h2 id="online">Online</h2>${online}</section>
<section aria-labelledby="configs"><h2 id="configs">Configurations</h2>${issued}</section>
<section aria-labelledby="usage"><h2 id="usage">Use, last 30 days</h2>${chart}</section>`,
  };
}

/**
 * Each node's state as this instance sees it, and an alert for every node that is down. A
 * session limited to some profiles sees only the nodes of those profiles, by number, as the
 * Admin API shows it nodes (`profiles` names a limited key's nodes in its ranges, never their
 * addresses): nothing of the nodes that serve other profiles only.
 */
async function nodesSection(r: ConsoleRequest): Promise<Html> {
  const { ctx } = r;
  const limited = callerProfiles(r.frame.caller) !== null;
  const shown = limited ? await nodesOfProfiles(r) : null;
  const nodes = [...ctx.config.nodes.values()].filter((node) => shown === null || shown.has(node.nodeNumber));
  return html`<section aria-labelledby="nodes"><h2 id="nodes">Nodes</h2>${table(
    'Nodes and their state',
    ['Node', 'State', 'Last reconcile'],
    nodes.map((node) => {
      const state = ctx.nodes.isDown(node.nodeNumber)
        ? 'down'
        : ctx.nodes.isInMaintenance(node.nodeNumber)
          ? 'maintenance'
          : 'up';
      const last = lastReconcile(ctx, node.nodeNumber);
      const name = limited ? html`${node.nodeNumber}` : html`${node.nodeNumber} (${node.nodeUrl})`;
      return html`<tr><td>${name}</td><td><span class="state ${state}">${state}</span></td><td>${last ?? 'not yet (on this instance)'}</td></tr>`;
    }),
    'No nodes configured.',
  )}${nodes
    .filter((node) => ctx.nodes.isDown(node.nodeNumber))
    .map(
      (node) =>
        html`<p class="problem" role="alert">Node ${node.nodeNumber} is down: changes for it wait until it answers again (the database holds them); the console works on.</p>`,
    )}${nodes.flatMap((node) =>
    ctx.nodes
      .listingsOverLimit(node.nodeNumber)
      .map(
        (over) =>
          html`<p class="problem" role="alert">Node ${node.nodeNumber} answers ${over.what} with more than the portal reads (${describeBytes(over.limitBytes)}), since ${over.since.toISOString()}: it is not reconciled, and revocations waiting on it are not confirmed, until it holds fewer.</p>`,
      ),
  )}</section>`;
}

/** The nodes the caller's profiles are on, as the Admin API's `profiles` answer names them. */
async function nodesOfProfiles({ ctx, frame, request }: ConsoleRequest): Promise<Set<number>> {
  const { profiles } = await readAnswer(ctx, frame.caller, request, profilesRoute);
  return new Set(profiles.flatMap((profile) => profile.ranges.map((range) => range.node_number)));
}

/** WireGuard addresses in use per profile and node, of the profiles the caller sees. */
async function poolsTable({ ctx, frame, request }: ConsoleRequest): Promise<Html> {
  const poolUse = await wireGuardPoolUse(ctx);
  const profiles = await readAnswer(ctx, frame.caller, request, profilesRoute);
  const visible = new Set<string>(profiles.profiles.map((profile) => profile.profile_id));
  const rows = poolUse
    .filter((pool) => visible.has(pool.profileId))
    .map(
      (pool) =>
        html`<tr><td>${pool.profileId}</td><td>${pool.nodeNumber}</td><td>${pool.used} of ${pool.size}</td></tr>`,
    );
  return table('WireGuard addresses in use', ['Profile', 'Node', 'Used'], rows, 'No WireGuard pools.');
}

async function sessionsTable({ ctx, frame, request }: ConsoleRequest): Promise<Html> {
  const list = await readAnswer(ctx, frame.caller, request, connectionListRoute);
  const rows = Object.entries(list.connection_list).map(
    ([profile, connections]) => html`<tr><td>${profile}</td><td>${connections.length}</td></tr>`,
  );
  return table('Sessions open now', ['Profile', 'Sessions'], rows, 'No profiles.');
}

/** Configurations issued and revoked since midnight UTC, counted from the audit log. */
async function issuedToday({ ctx, frame, request }: ConsoleRequest): Promise<Html> {
  const today = new Date(ctx.clock.now().toISOString().slice(0, 10)).toISOString();
  let created = 0;
  let revoked = 0;
  let cursor: string | null = null;
  do {
    const audit: AuditLogPage = await readAnswer(ctx, frame.caller, request, auditLogRoute, {
      since: today,
      limit: '1000',
      ...(cursor === null ? {} : { cursor }),
    });
    for (const entry of audit.audit_log) {
      if (entry.status >= 300) continue;
      if (entry.call === 'create') created += entry.connection_ids.length;
      else
        revoked += ['delete_connection', 'destroy', 'disable_user'].includes(entry.call)
          ? entry.connection_ids.length
          : 0;
    }
    cursor = audit.next_cursor;
  } while (cursor !== null);
  return html`<p>Issued today (UTC): <strong>${created}</strong> · revoked today: <strong>${revoked}</strong> (from the audit log)</p>`;
}

/** Daily unique users and peak sessions of the last 30 days: a chart, and the figures as a table. */
async function usageChart({ ctx, frame, request }: ConsoleRequest): Promise<Html> {
  const since = new Date(ctx.clock.now().getTime() - 30 * DAY_MS).toISOString().slice(0, 10);
  const stats = await readAnswer(ctx, frame.caller, request, statsRoute, { since });
  const rows = Object.entries(stats.stats).flatMap(([profile, days]) =>
    days.map(
      (day) =>
        html`<tr><td>${day.date}</td><td>${profile}</td><td>${day.unique_user_count}</td><td>${day.max_connection_count}</td></tr>`,
    ),
  );
  // The first daily run also counts the day before the portal ran, as zero: nothing to draw.
  const anyUse = Object.values(stats.stats).some((days) =>
    days.some((day) => day.unique_user_count > 0 || day.max_connection_count > 0),
  );
  if (!anyUse)
    return html`<p class="empty">No data yet: no use recorded in the last 30 days. A day is counted once it is over (UTC).</p>`;
  return html`${jsonIsland('usage-data', stats.stats)}<div class="chart"><canvas id="usage-chart" role="img" aria-label="Daily unique users and peak sessions per profile, last 30 days"></canvas></div>
<details><summary>The figures as a table</summary>${table('Daily use, last 30 days', ['Day', 'Profile', 'Unique users', 'Peak sessions'], rows, 'No statistics yet: a day is counted once it is over.')}</details>`;
}

async function users(r: ConsoleRequest): Promise<PageResult> {
  const { ctx, frame, request, query } = r;
  const { base } = frame;
  const onlyDisabled = query['disabled'] === 'yes';
  const prefix = query['prefix'] ?? '';
  const after = query['after'] ?? '';
  const { body, status } = await mainSection(async () => {
    // The portal pages by prefix (GET /users?prefix&limit&cursor): the console never reads every user.
    const params = {
      limit: String(USERS_PAGE),
      ...(prefix === '' ? {} : { prefix }),
      ...(after === '' ? {} : { cursor: after }),
    };
    const page = onlyDisabled
      ? await readAnswer(ctx, frame.caller, request, disabledUsersRoute, params)
      : await readAnswer(ctx, frame.caller, request, usersRoute, params);
    const shown = 'users' in page ? page.users : page.disabled_users;
    // Sent with a limit, the answer always has next_cursor (null on the last page).
    const next = page.next_cursor ?? null;
    // Marked, as the user's page offers them no Enable (enable_user refuses them).
    const inactive = new Set(page.directory_inactive ?? []);
    const rows = shown.map(
      (userId) =>
        html`<tr><td>${userLink(base, userId)}${inactive.has(userId) ? html` <span class="hint">inactive in the directory (SCIM)</span>` : ''}</td></tr>`,
    );
    return html`${table(onlyDisabled ? 'Disabled users' : 'Users', ['User'], rows, 'No users match.')}${
      next === null
        ? ''
        : html`<p>${link(base, 'users', { prefix, after: next, ...(onlyDisabled ? { disabled: 'yes' } : {}) }, 'Next page')}</p>`
    }`;
  });
  return {
    title: 'Users',
    status,
    body: html`${doneNote(r.frame, query, query['user_id'] ?? '')}<form method="get" action="${base}users" class="filters" role="search">
<span class="field"><label for="prefix">User id starts with</label><input id="prefix" name="prefix" value="${prefix}"></span>
<label><input type="checkbox" name="disabled" value="yes"${onlyDisabled ? html` checked` : ''}> only disabled</label>
<button type="submit">Search</button></form>${body}`,
  };
}

async function user(r: ConsoleRequest): Promise<PageResult> {
  const { ctx, frame, request, query } = r;
  const { base, caller } = frame;
  const userId = query['user_id'] ?? '';
  const disabled = await section(async () => {
    const { disabled: isDisabled, directoryInactive } = await userStateOf(ctx, caller, request, userId);
    // enable_user refuses a user the directory calls inactive: no Enable, and the page says why.
    const actions = html`${
      may(frame, 'write') && !directoryInactive
        ? isDisabled
          ? link(base, 'confirm', { action: 'enable_user', user_id: userId }, 'Enable…')
          : link(base, 'confirm', { action: 'disable_user', user_id: userId }, 'Disable…')
        : ''
    } ${may(frame, 'admin') ? link(base, 'confirm', { action: 'destroy', user_id: userId }, 'Delete user…') : ''}`;
    return html`<p>State: <strong>${isDisabled ? 'disabled' : 'enabled'}</strong></p>${
      directoryInactive ? html`<p class="hint" id="directory-inactive">${DIRECTORY_INACTIVE}</p>` : ''
    }<p class="actions">${actions}</p>`;
  });
  const configurations = await section(async () => {
    const list = await readAnswer(ctx, caller, request, userConfigurationListRoute, { user_id: userId });
    return table(
      'Configurations',
      ['Name', 'Profile', 'Protocol', 'Expires', 'Connection id', ''],
      list.user_configuration_list.map(
        (configuration) =>
          html`<tr><td>${configuration.display_name}</td><td>${configuration.profile_id}</td><td>${configuration.vpn_proto}</td><td>${configuration.expires_at}</td><td class="id">${configuration.connection_id}</td><td>${
            may(frame, 'write')
              ? link(
                  base,
                  'confirm',
                  { action: 'delete_connection', user_id: userId, connection_id: configuration.connection_id },
                  'Delete…',
                )
              : ''
          }</td></tr>`,
      ),
      'No configurations.',
    );
  });
  const devices = await section(async () => {
    const page = await readAnswer(ctx, caller, request, devicesRoute, { user_id: userId });
    return table(
      'Devices',
      ['Device', 'Platform', 'Profile', 'State', 'Identity'],
      page.devices.map(
        (device) =>
          html`<tr><td class="id">${link(base, 'device', { device_id: device.device_id }, device.device_id)}</td><td>${device.platform}</td><td>${device.profile_id}</td><td>${device.state}</td><td>${device.identity}</td></tr>`,
      ),
      'No devices.',
    );
  });
  const sessions = await section(async () => {
    const log = await readAnswer(ctx, caller, request, connectionLogRoute, {
      user_id: userId,
      limit: '20',
    });
    return logTable(base, log.connection_log);
  });
  const issue = may(frame, 'write') ? await issueForms(r, userId) : html``;
  return {
    title: `User ${userId}`,
    body: html`${doneNote(r.frame, query, userId)}${disabled}
<section aria-labelledby="configurations"><h2 id="configurations">Configurations</h2>${configurations}</section>
<section aria-labelledby="devices"><h2 id="devices">Devices</h2>${devices}</section>
<section aria-labelledby="sessions"><h2 id="sessions">Latest sessions</h2>${sessions}<p>${link(base, 'log', { user_id: userId }, 'All of this user’s sessions')}</p></section>
${issue}`,
  };
}

async function issueForms(r: ConsoleRequest, userId: string): Promise<Html> {
  const { ctx, frame, request } = r;
  const { base } = frame;
  return section(async () => {
    const profiles = (await readAnswer(ctx, frame.caller, request, profilesRoute)).profiles;
    const options = profiles.map(
      (profile) => html`<option value="${profile.profile_id}">${profile.display_name} (${profile.profile_id})</option>`,
    );
    const expiries = ctx.config.supportedSessionExpiry.map(
      (expiry) => html`<option value="${expiry}">${expiry}</option>`,
    );
    return html`<section aria-labelledby="issue"><h2 id="issue">Issue a configuration</h2>
<form method="get" action="${base}confirm" class="stack">
<input type="hidden" name="action" value="create"><input type="hidden" name="user_id" value="${userId}">
<label for="create-profile">Profile</label><select id="create-profile" name="profile_id">${options}</select>
<label for="create-name">Name</label><input id="create-name" name="display_name" value="Console" maxlength="64">
<label for="create-expiry">Valid for</label><select id="create-expiry" name="expires_in">${expiries}</select>
<button type="submit">Issue…</button></form></section>
<section aria-labelledby="token"><h2 id="token">Enrollment token</h2>
<form method="get" action="${base}confirm" class="stack">
<input type="hidden" name="action" value="enrollment_token"><input type="hidden" name="user_id" value="${userId}">
<label for="token-profile">Profile</label><select id="token-profile" name="profile_id">${options}</select>
<label for="token-valid">Can be redeemed for</label><input id="token-valid" name="valid_for" value="PT1H">
<label for="token-uses">Uses</label><input id="token-uses" name="uses" value="1" inputmode="numeric">
<button type="submit">Make a token…</button></form></section>`;
  });
}

export function logTable(base: string, entries: readonly ConnectionLogEntry[]): Html {
  return table(
    'Sessions',
    ['User', 'Profile', 'Node', 'Addresses', 'Client address', 'Connected', 'Disconnected'],
    entries.map(
      (entry) =>
        html`<tr><td>${userLink(base, entry.user_id)}</td><td>${entry.profile_id}</td><td>${entry.node_number}</td><td>${entry.ip_four} ${entry.ip_six}</td><td>${entry.originating_ip ?? ''}</td><td>${entry.connected_at}</td><td>${entry.disconnected_at ?? 'open'}</td></tr>`,
    ),
    'No sessions.',
  );
}

async function connections(r: ConsoleRequest): Promise<PageResult> {
  const { ctx, frame, request, query } = r;
  const { base } = frame;
  const { body, status } = await mainSection(async () => {
    const list = await readAnswer(ctx, frame.caller, request, connectionListRoute);
    const disconnect = (userId: string, connectionId: string) =>
      may(frame, 'write')
        ? link(base, 'confirm', { action: 'disconnect', user_id: userId, connection_id: connectionId }, 'Disconnect…')
        : '';
    return html`${Object.entries(list.connection_list).map(
      ([profile, entries]) =>
        html`<section><h2>${profile}</h2>${table(
          `Online in ${profile}`,
          ['User', 'Name', 'Protocol', 'Addresses', 'Connection id', ''],
          entries.map(
            (entry) =>
              html`<tr><td>${userLink(base, entry.user_id)}</td><td>${entry.display_name}</td><td>${entry.vpn_proto}</td><td>${entry.ip_list.join(' ')}</td><td class="id">${entry.connection_id}</td><td>${disconnect(entry.user_id, entry.connection_id)}</td></tr>`,
          ),
          'Nobody online.',
        )}</section>`,
    )}`;
  });
  return { title: 'Online now', status, body: html`${doneNote(r.frame, query, '')}${body}` };
}

async function connectionLog(r: ConsoleRequest): Promise<PageResult> {
  const { ctx, frame, request, query } = r;
  const { base } = frame;
  const zone = knownZone(query['tz']);
  const typed: Record<string, string> = {};
  for (const name of ['ip', 'at', 'user_id', 'profile_id', 'since', 'until', 'reason', 'cursor']) {
    const value = query[name];
    if (value !== undefined && value !== '') typed[name] = value;
  }
  // What the search sends: the typed times in UTC (src/http/console/local-time.ts).
  const filters: Record<string, string> = { ...typed };
  const conversions: Html[] = [];
  let refusal: string | undefined;
  for (const [name, label] of TIME_FIELDS) {
    const text = typed[name];
    if (text === undefined) continue;
    const time = readConsoleTime(text, zone);
    filters[name] = time.value;
    refusal ??= time.refusal;
    if (time.readIn !== null) conversions.push(html`${label} ${text} (${time.readIn}) = ${time.value}`);
  }
  const { body, status } = await mainSection(async () => {
    // A time the zone's clocks show twice or never: no search until the offset says which.
    if (refusal !== undefined) throw new ConsoleRefusal(400, refusal);
    const log = await readAnswer(ctx, frame.caller, request, connectionLogRoute, {
      ...filters,
      limit: '100',
    });
    return html`${logTable(base, log.connection_log)}${log.next_cursor === null ? '' : html`<p>${link(base, 'log', { ...filters, cursor: log.next_cursor }, 'Next page')}</p>`}`;
  });
  const field = (name: string, label: string, hint: string) =>
    html`<span class="field"><label for="f-${name}">${label}</label><input id="f-${name}" name="${name}" value="${typed[name] ?? ''}" placeholder="${hint}"></span>`;
  const converted =
    conversions.length === 0
      ? html``
      : html`<p class="notice" role="status">Searched in UTC: ${conversions.map((line, index) => html`${index === 0 ? '' : '; '}${line}`)}.</p>`;
  return {
    title: 'Connection log',
    status,
    body: html`<form method="get" action="${base}log" class="filters" role="search">${zoneField(zone)}${field('ip', 'Address (tunnel or client)', '10.10.3.7')}${field(
      'at',
      'Open at',
      '2026-01-31 14:02',
    )}${field('user_id', 'User', '')}${field('profile_id', 'Profile', '')}${field(
      'since',
      'Open at or after',
      '2026-01-31 14:00',
    )}${field('until', 'Started before', '2026-01-31 15:00')}${field(
      'reason',
      'Reason of an address search (audit log)',
      'CSIRT ticket #1234',
    )}<button type="submit">Search</button></form>${timeHint(zone)}${converted}${body}`,
  };
}

/** The connection log's time fields, and how the conversion note names them. */
const TIME_FIELDS = [
  ['at', 'open at'],
  ['since', 'open at or after'],
  ['until', 'started before'],
] as const;

async function audit(r: ConsoleRequest): Promise<PageResult> {
  const { ctx, frame, request, query } = r;
  const filters: Record<string, string> = {};
  for (const name of ['key', 'user_id', 'since', 'until', 'cursor']) {
    const value = query[name];
    if (value !== undefined && value !== '') filters[name] = value;
  }
  const { body, status } = await mainSection(async () => {
    const page = await readAnswer(ctx, frame.caller, request, auditLogRoute, { ...filters, limit: '100' });
    return html`${table(
      'Audit log, newest first',
      ['When', 'Key', 'From', 'Call', 'Status', 'User', 'Detail'],
      page.audit_log.map(
        (entry) =>
          html`<tr><td>${entry.at}</td><td>${entry.key_name ?? '—'}</td><td>${entry.source_address}</td><td>${entry.call}</td><td>${entry.status}</td><td>${entry.user_id ?? ''}</td><td>${entry.detail ?? ''}${entry.repeated > 0 ? ` (+${entry.repeated} more)` : ''}</td></tr>`,
      ),
      'No entries.',
    )}${page.next_cursor === null ? '' : html`<p>${link(frame.base, 'audit', { ...filters, cursor: page.next_cursor }, 'Older entries')}</p>`}`;
  });
  return {
    title: 'Audit log',
    status,
    body: html`<form method="get" action="${frame.base}audit" class="filters" role="search"><span class="field"><label for="a-key">Key</label><input id="a-key" name="key" value="${filters['key'] ?? ''}"></span><span class="field"><label for="a-user">User</label><input id="a-user" name="user_id" value="${filters['user_id'] ?? ''}"></span><button type="submit">Search</button></form>${body}`,
  };
}

async function webhooks(r: ConsoleRequest): Promise<PageResult> {
  const { ctx, frame, request, query } = r;
  const { body: subscriptions, status } = await mainSection(async () => {
    const list = await readAnswer(ctx, frame.caller, request, webhooksRoute);
    return table(
      'Subscriptions',
      ['Id', 'URL', 'Events', 'Description', 'Created'],
      list.webhooks.map(
        (hook) =>
          html`<tr><td>${link(frame.base, 'webhooks', { webhook_id: hook.webhook_id }, hook.webhook_id)}</td><td>${hook.url}</td><td>${hook.event_types.join(', ')}</td><td>${hook.description ?? ''}</td><td>${hook.created_at}</td></tr>`,
      ),
      'No subscriptions.',
    );
  });
  const webhookId = query['webhook_id'];
  const deliveries = await section(async () => {
    const page = await readAnswer(
      ctx,
      frame.caller,
      request,
      webhookDeliveriesRoute,
      webhookId === undefined ? {} : { webhook_id: webhookId },
    );
    return table(
      'Deliveries, newest first',
      ['Delivery', 'Subscription', 'Event', 'State', 'Attempts', 'Created'],
      page.webhook_deliveries.map(
        (delivery) =>
          html`<tr><td class="id">${delivery.delivery_id}</td><td>${delivery.webhook_id}</td><td>${delivery.event_type}</td><td>${delivery.state}</td><td>${delivery.attempts.length}</td><td>${delivery.created_at}</td></tr>`,
      ),
      'No deliveries.',
    );
  });
  return {
    title: 'Webhooks',
    status,
    body: html`<section aria-labelledby="subs"><h2 id="subs">Subscriptions</h2>${subscriptions}</section><section aria-labelledby="deliveries"><h2 id="deliveries">Deliveries${
      webhookId === undefined ? '' : ` to ${webhookId}`
    }</h2>${deliveries}</section>`,
  };
}

async function tokens(r: ConsoleRequest): Promise<PageResult> {
  const { ctx, frame, request } = r;
  const { body, status } = await mainSection(async () => {
    const list = await readAnswer(ctx, frame.caller, request, enrollmentTokensRoute);
    return table(
      'Enrollment tokens, newest first',
      ['Token', 'User', 'Profile', 'State', 'Uses left', 'Until', 'Made by', ''],
      list.enrollment_tokens.map(
        (token) =>
          html`<tr><td class="id">${token.token_id}</td><td>${userLink(frame.base, token.user_id)}</td><td>${token.profile_id}</td><td>${token.state}</td><td>${token.uses_left} of ${token.uses}</td><td>${token.expires_at}</td><td>${token.created_by ?? ''}</td><td>${
            (token.state === 'usable' || token.state === 'profile-removed') && may(frame, 'write')
              ? link(
                  frame.base,
                  'confirm',
                  { action: 'revoke_enrollment_token', user_id: token.user_id, token_id: token.token_id },
                  'Revoke…',
                )
              : ''
          }</td></tr>`,
      ),
      'No enrollment tokens.',
    );
  });
  return { title: 'Enrollment tokens', status, body };
}

async function adminKeys(r: ConsoleRequest): Promise<PageResult> {
  const { ctx, frame, request } = r;
  const { base } = frame;
  const { body, status } = await mainSection(async () => {
    const list = await readAnswer(ctx, frame.caller, request, adminKeysRoute);
    return table(
      'Admin keys, by name',
      ['Name', 'Scope', 'Profiles', 'Allowed from', 'Created', 'Expires', 'Last used', 'State', ''],
      list.admin_keys.map(
        (key) =>
          html`<tr><td>${key.name}</td><td>${key.scope}</td><td>${key.profiles?.join(', ') ?? 'all'}</td><td>${key.allow_list?.join(', ') ?? 'anywhere allowed'}</td><td>${key.created_at}</td><td>${key.expires_at ?? 'never'}</td><td>${key.last_used_at === null ? 'never' : `${key.last_used_at} from ${key.last_used_address ?? '?'}`}</td><td>${key.state}</td><td>${
            key.state === 'active'
              ? link(base, 'confirm', { action: 'revoke_admin_key', name: key.name }, `Revoke ${key.name}…`)
              : ''
          }</td></tr>`,
      ),
      'No admin keys.',
    );
  });
  const scopes = KEY_SCOPES.map((scope) => html`<option value="${scope}">${scope}</option>`);
  return {
    title: 'Admin keys',
    status,
    body: html`${body}<section aria-labelledby="new-key"><h2 id="new-key">New admin key</h2>
<p class="hint">A key never gets more scope, more profiles, a wider allow-list or a later expiry than the key you signed in with.</p>
<form method="get" action="${base}confirm" class="stack">
<input type="hidden" name="action" value="create_admin_key">
<label for="key-name">Name</label><input id="key-name" name="name" required maxlength="64">
<label for="key-scope">Scope</label><select id="key-scope" name="scope">${scopes}</select>
<label for="key-profiles">Profiles (comma-separated; empty: every profile)</label><input id="key-profiles" name="profiles">
<label for="key-expires">Expires after (ISO 8601 duration; empty: never)</label><input id="key-expires" name="expires_in" placeholder="P90D">
<label for="key-allow">Allowed from (CIDR prefixes, comma-separated; empty: adminApi.allowList)</label><input id="key-allow" name="allow_list">
<button type="submit">Make a key…</button></form></section>`,
  };
}

export const pageHandlers: Readonly<Record<string, ConsolePage>> = {
  '': dashboard,
  users,
  user,
  connections,
  log: connectionLog,
  abuse: abuseLookup,
  audit,
  webhooks,
  tokens,
  keys: adminKeys,
};
