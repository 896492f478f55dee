// The frame of every console page: one heading per page, a navigation landmark, the signed-in
// key and its scope, a form to sign out; styles and the one script come from the portal itself.
import { createHmac } from 'node:crypto';
import { callerName, callerProfiles, callerScope, type AdminCaller } from '../../core/admin-call.js';
import { scopeAllows, type AdminScope } from '../../protocol/admin-api.js';
import { constantTimeEquals } from '../../shared/constant-time.js';
import type { AdminRoute } from '../admin-api/admin-route.js';
import { adminKeysRoute } from '../admin-api/routes/access/admin-keys.js';
import { auditLogRoute } from '../admin-api/routes/access/audit-log.js';
import { attributionRoute } from '../admin-api/routes/attribution/attribution.js';
import { devicesRoute } from '../admin-api/routes/devices/devices.js';
import { enrollmentTokensRoute } from '../admin-api/routes/enrollment/enrollment-tokens.js';
import { connectionListRoute } from '../admin-api/routes/listings/connection-list.js';
import { usersRoute } from '../admin-api/routes/listings/users.js';
import { connectionLogRoute } from '../admin-api/routes/sessions/connection-log.js';
import { webhooksRoute } from '../admin-api/routes/webhooks/webhooks.js';
import { html, type Html } from './html.js';

export interface PageFrame {
  /** The console's own path with a trailing slash (`/vpn-user-portal/admin/`). */
  readonly base: string;
  readonly caller: AdminCaller;
  readonly csrfToken: string;
}

/** What decides whether a section's link is shown: the rights of the Admin API call its page reads. */
type CallRights = Pick<AdminRoute, 'scope' | 'needsEveryProfile'>;

// Each the call its page reads (the dashboard reads several, each shown or explained on its own),
// so a link is shown exactly when its page's read would be allowed.
const SECTIONS: readonly { readonly path: string; readonly label: string; readonly reads: CallRights }[] = [
  { path: '', label: 'Dashboard', reads: { scope: 'read' } },
  { path: 'users', label: 'Users', reads: usersRoute },
  { path: 'devices', label: 'Devices', reads: devicesRoute },
  { path: 'connections', label: 'Online', reads: connectionListRoute },
  { path: 'log', label: 'Connection log', reads: connectionLogRoute },
  { path: 'abuse', label: 'Abuse lookup', reads: attributionRoute },
  { path: 'tokens', label: 'Enrollment tokens', reads: enrollmentTokensRoute },
  { path: 'audit', label: 'Audit log', reads: auditLogRoute },
  { path: 'webhooks', label: 'Webhooks', reads: webhooksRoute },
  { path: 'keys', label: 'Admin keys', reads: adminKeysRoute },
];

export function page(frame: PageFrame | null, title: string, body: Html, base: string): string {
  const nav =
    frame === null
      ? html``
      : html`<nav aria-label="Sections"><ul>${SECTIONS.filter((section) => mayCall(frame, section.reads)).map(
          (section) => html`<li><a href="${base}${section.path}">${section.label}</a></li>`,
        )}</ul>
        <form method="post" action="${base}sign-out" class="sign-out">${csrfField(frame)}<span class="who">${who(frame.caller)}</span> <button type="submit">Sign out</button></form></nav>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · VPN portal</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${base}assets/console.css">
<script src="${base}assets/chart/chart.umd.min.js" defer></script>
<script src="${base}assets/console.js" defer></script>
</head>
<body>
<header><a class="skip" href="#main">Skip to content</a><span class="brand">VPN portal</span>${nav}</header>
<main id="main" tabindex="-1">
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`.text;
}

export function csrfField(frame: PageFrame): Html {
  return html`<input type="hidden" name="csrf" value="${frame.csrfToken}">`;
}

/** Whether the session may make a call needing `scope`: pages show a change's button only then. */
export function may(frame: PageFrame, scope: AdminScope): boolean {
  const held = callerScope(frame.caller);
  return held !== null && scopeAllows(held, scope);
}

/**
 * Whether the session may make a call, as bindCall checks it before the call runs: its scope, and
 * a key for every profile when the call needs one. Pages show a link or read only then, so that
 * no refusal the person never asked for is shown or stands in the audit log.
 */
export function mayCall(frame: PageFrame, rights: CallRights): boolean {
  return may(frame, rights.scope) && (rights.needsEveryProfile !== true || callerProfiles(frame.caller) === null);
}

/** Who is signed in, as the header says it: name, scope and the profiles it is limited to. */
function who(caller: AdminCaller): string {
  const profiles = callerProfiles(caller);
  return `${callerName(caller) ?? ''} · ${callerScope(caller) ?? ''}${profiles === null ? '' : ` · ${profiles.join(', ')}`}`;
}

/** A refusal or failure, saying the API's reason (for 403: the scope or profile limit). */
export function problem(status: number, message: string): Html {
  const what =
    status === 403 ? 'Not allowed' : status === 404 || status === 400 || status === 409 ? 'Not possible' : 'Failed';
  return html`<p class="problem" role="alert"><strong>${what} (${status}):</strong> ${message}</p>`;
}

/** What a change left behind, as the page after it says (a code in the URL, so a link cannot make the console say anything else). */
const DONE_NOTES = {
  disabled: (userId: string) => `${userId} was disabled.`,
  enabled: (userId: string) => `${userId} was enabled.`,
  deleted: (userId: string) => `${userId} was deleted.`,
  'configuration-deleted': () => 'The configuration was deleted.',
  disconnected: () => 'Disconnected: the configuration was deleted and cut from its node.',
  'device-suspended': (deviceId: string) => `${deviceId} was suspended: its configurations are off the nodes.`,
  'device-resumed': (deviceId: string) => `${deviceId} was resumed.`,
  'device-retired': (deviceId: string) => `${deviceId} was retired.`,
} as const;
export type DoneNote = keyof typeof DONE_NOTES;

/**
 * The note of `done` about its subject (a user id, or a device id for a device's change), shown
 * only when the address carries the seal the change's own redirect gave it: a link from
 * elsewhere (`users?done=deleted&user_id=alice`) cannot make the console say what did not happen.
 */
export function doneNote(frame: PageFrame, query: Readonly<Record<string, string | undefined>>, subject: string): Html {
  const done = query['done'];
  if (done === undefined || !Object.hasOwn(DONE_NOTES, done)) return html``;
  if (!constantTimeEquals(query['note'] ?? '', noteSeal(frame, done, subject))) return html``;
  return notice(DONE_NOTES[done as DoneNote](subject));
}

/** The address a change leads to, with the seal of its note (keyed by the session's CSRF token). */
export function sealedDoneAddress(frame: PageFrame, address: string): string {
  const start = address.indexOf('?');
  if (start === -1) return address;
  const query = new URLSearchParams(address.slice(start + 1));
  const done = query.get('done');
  if (done === null) return address;
  query.set('note', noteSeal(frame, done, query.get('user_id') ?? query.get('device_id') ?? ''));
  return `${address.slice(0, start)}?${query.toString()}`;
}

function noteSeal(frame: PageFrame, done: string, subject: string): string {
  return createHmac('sha256', frame.csrfToken)
    .update(`done note\n${done}\n${subject}`)
    .digest('base64url')
    .slice(0, 22);
}

/**
 * Why the console offers no Enable for a disabled user the directory (SCIM) calls inactive:
 * enable_user answers 409 for them, whoever disabled them first (docs/scim.md).
 */
export const DIRECTORY_INACTIVE =
  'The directory (SCIM) calls this user inactive: the portal enables them only once the directory calls the person active again.';

export function notice(message: string): Html {
  return html`<p class="notice" role="status">${message}</p>`;
}

export function table(caption: string, headings: readonly string[], rows: readonly Html[], empty: string): Html {
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<div class="scroll"><table><caption>${caption}</caption><thead><tr>${headings.map((heading) => html`<th scope="col">${heading}</th>`)}</tr></thead><tbody>${rows}</tbody></table></div>`;
}

/** The browser's time zone, filled in by the console's script; typed times without an offset are read in it. */
export function zoneField(zone: string): Html {
  return html`<input type="hidden" name="tz" value="${zone}" data-browser-zone>`;
}

/** How to type a time, naming the zone it is read in (the script shows the browser's). */
export function timeHint(zone: string): Html {
  return html`<p class="hint">Times: <kbd>YYYY-MM-DD HH:MM</kbd> in your time zone (<span data-browser-zone-name>${zone}</span>), or ISO 8601 with an offset (<kbd>…Z</kbd> for UTC).</p>`;
}
