// The console's "Abuse lookup" page: the four facts of an abuse report (public address, port,
// moment) and why you look, in one form; the answer of GET /attribution as the signed-in key
// sees it (its profiles only), or the portal's reason why there is none. Each look-up is in the
// audit log with its reason, as through the API.
import type { AttributionAnswer } from '../../protocol/admin-api.js';
import { attributionRoute } from '../admin-api/routes/attribution/attribution.js';
import { ConsoleRefusal, readAnswer } from './calls.js';
import { html, type Html } from './html.js';
import { problem, table, timeHint, zoneField } from './layout.js';
import { knownZone, readConsoleTime } from './local-time.js';
import type { ConsoleRequest, PageResult } from './console-request.js';

const FIELDS = ['ip', 'port', 'at', 'reason'] as const;

export async function abuseLookup(r: ConsoleRequest): Promise<PageResult> {
  const { ctx, frame, request, query } = r;
  const asked: Record<string, string> = {};
  for (const name of FIELDS) {
    const value = query[name]?.trim();
    if (value !== undefined && value !== '') asked[name] = value;
  }
  const zone = knownZone(query['tz']);
  // The moment as typed stays in the form; the call gets it in UTC (src/http/console/local-time.ts).
  const moment = asked['at'] === undefined ? null : readConsoleTime(asked['at'], zone);
  let result = html``;
  if (asked['ip'] !== undefined) {
    try {
      // A time the zone's clocks show twice or never: no look-up until the offset says which.
      if (moment?.refusal !== undefined) throw new ConsoleRefusal(400, moment.refusal);
      const answer = await readAnswer(ctx, frame.caller, request, attributionRoute, {
        ...asked,
        ...(moment === null ? {} : { at: moment.value }),
      });
      result = answerSection(frame.base, answer);
    } catch (error) {
      if (!(error instanceof ConsoleRefusal)) throw error;
      result = html`<section aria-labelledby="answer"><h2 id="answer">Answer</h2>${problem(error.status, error.message)}</section>`;
    }
  }
  const field = (name: (typeof FIELDS)[number], label: string, hint: string, extra: Html = html``) =>
    html`<label for="abuse-${name}">${label}</label><input id="abuse-${name}" name="${name}" value="${asked[name] ?? ''}" placeholder="${hint}"${extra}>`;
  return {
    title: 'Abuse lookup',
    body: html`<p class="hint">From an abuse report: the node's public address, the source port and the moment it names. Without a port, the address is a tunnel address or the client's own address. Every look-up is kept in the audit log with its reason.</p>
<form method="get" action="${frame.base}abuse" class="stack" role="search">
${field('ip', 'Public address', '192.0.2.10', html` required`)}
${field('port', 'Port', '53211', html` inputmode="numeric"`)}
${field('at', 'Time', '2026-01-31 14:03:07', html` required`)}${zoneField(zone)}
${field('reason', 'Reason (kept in the audit log)', 'CSIRT ticket #1234', html` maxlength="200"`)}
<button type="submit">Look up</button></form>${timeHint(zone)}${
      moment?.readIn === null || moment === null
        ? ''
        : html`<p class="notice" role="status">Looked up in UTC: ${asked['at'] ?? ''} (${moment.readIn}) = ${moment.value}.</p>`
    }${result}`,
  };
}

function answerSection(base: string, answer: AttributionAnswer): Html {
  const { translation } = answer;
  const how =
    translation === null
      ? html`<p>Sessions that held the address at ${answer.at}:</p>`
      : html`<p class="notice" role="status">At ${answer.at}, node ${translation.node_number} mapped port ${translation.port} of ${translation.public_address} to client ${translation.client_ip} (its ports ${translation.first_port}–${translation.last_port}; mapping in force since ${translation.mapping_applied_at}).</p>`;
  const rows = answer.sessions.map(
    (session) =>
      html`<tr><td><a href="${base}user?${new URLSearchParams({ user_id: session.user_id }).toString()}">${session.user_id}</a></td><td>${session.device_id ?? ''}</td><td>${session.profile_id}</td><td>${session.node_number}</td><td>${session.ip_four} ${session.ip_six}</td><td>${session.originating_ip ?? ''}</td><td>${session.connected_at}</td><td>${session.disconnected_at ?? 'open'}</td><td class="id">${session.connection_id}</td></tr>`,
  );
  return html`<section aria-labelledby="answer"><h2 id="answer">Answer</h2>${how}${table(
    'Who held the address',
    [
      'User',
      'Device',
      'Profile',
      'Node',
      'Tunnel addresses',
      'Client address',
      'Connected',
      'Disconnected',
      'Connection id',
    ],
    rows,
    'No sessions.',
  )}</section>`;
}
