// The reference's script hook (`connectScriptPath`, reference §9.4): a program run at every
// connect and disconnect with the session in `VPN_*` environment variables. A connect of an
// OpenVPN client waits for it, and a non-zero exit (or a script still running after
// `connectScriptTimeout`, which is then killed) refuses the client; one the node stopped waiting
// for, or whose configuration was revoked while the script ran, is refused too, after its "C",
// and gets its "D" at once. Everything else runs after
// the change is durable and never holds up an Admin API call; its failures are logged.
// WireGuard has no connect to refuse: its sessions start from handshakes
// (core/sessions/wireguard.ts), so the script hears of them, later, but cannot veto them.
import { execFile } from 'node:child_process';
import type { Logger } from 'pino';
import { ListenerRefusal, type PortalEvent, type PortalEvents } from '../core/events.js';

export interface ConnectScript {
  readonly path: string;
  readonly timeoutMs: number;
}

export function runConnectScript(events: PortalEvents, script: ConnectScript, logger: Logger): void {
  events.approval(async (event) => {
    if (event.type !== 'session.started' || event.configuration.vpnProto !== 'openvpn') return;
    const outcome = await run(script, environmentOf(event));
    if (outcome.ok) return;
    logger.warn(
      { script: script.path, connectionId: event.configuration.connectionId, reason: outcome.reason },
      'connect script refused the OpenVPN client',
    );
    throw new ListenerRefusal(`connect script: ${outcome.reason}`);
  });
  // The script said yes, but the node stopped waiting and refused the client: no session opens,
  // so none will end; its "D" comes now, with nothing carried, to undo what its "C" set up.
  events.withdrawn(async (event) => {
    if (event.type !== 'session.started' || event.configuration.vpnProto !== 'openvpn') return;
    const outcome = await run(script, withdrawnEnvironmentOf(event));
    if (!outcome.ok)
      logger.warn({ script: script.path, event: 'withdrawn connect', reason: outcome.reason }, 'connect script failed');
  });
  events.afterCommit(async (event) => {
    if (event.type === 'session.started' && event.configuration.vpnProto === 'openvpn') return; // already run, above
    if (event.type !== 'session.started' && event.type !== 'session.ended') return;
    const outcome = await run(script, environmentOf(event));
    if (!outcome.ok)
      logger.warn({ script: script.path, event: event.type, reason: outcome.reason }, 'connect script failed');
  });
}

type Outcome = { readonly ok: true } | { readonly ok: false; readonly reason: string };

function run(script: ConnectScript, env: Record<string, string>): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile(
      script.path,
      [],
      {
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env },
        timeout: script.timeoutMs,
        killSignal: 'SIGKILL',
      },
      (error) => {
        if (error === null) resolve({ ok: true });
        else if (error.killed === true)
          resolve({ ok: false, reason: `still running after ${script.timeoutMs} ms; killed` });
        else if (typeof error.code === 'number') resolve({ ok: false, reason: `exited with ${error.code}` });
        else resolve({ ok: false, reason: error.message });
      },
    );
  });
}

/** The reference's variables; VPN_NODE_NUMBER is ours. */
function environmentOf(
  event: Extract<PortalEvent, { type: 'session.started' | 'session.ended' }>,
): Record<string, string> {
  if (event.type === 'session.started') {
    const { configuration } = event;
    return {
      VPN_EVENT: 'C',
      VPN_USER_ID: configuration.userId,
      VPN_PROFILE_ID: configuration.profileId,
      VPN_PROTO: configuration.vpnProto,
      VPN_CONNECTION_ID: configuration.connectionId,
      VPN_IP_FOUR: event.ipFour,
      VPN_IP_SIX: event.ipSix,
      VPN_ORIGINATING_IP: event.originatingIp ?? '',
      VPN_NODE_NUMBER: String(configuration.nodeNumber),
    };
  }
  return {
    VPN_EVENT: 'D',
    VPN_USER_ID: event.session?.userId ?? '',
    VPN_PROFILE_ID: event.session?.profileId ?? '',
    VPN_PROTO: event.vpnProto,
    VPN_CONNECTION_ID: event.connectionId,
    VPN_IP_FOUR: event.session?.ipFour ?? '',
    VPN_IP_SIX: event.session?.ipSix ?? '',
    VPN_BYTES_IN: String(event.bytesIn),
    VPN_BYTES_OUT: String(event.bytesOut),
    VPN_NODE_NUMBER: String(event.nodeNumber),
  };
}

/** A "D" for a connect refused after the script's "C": the same session, nothing carried. */
function withdrawnEnvironmentOf(event: Extract<PortalEvent, { type: 'session.started' }>): Record<string, string> {
  const { VPN_ORIGINATING_IP: _originatingIp, ...connect } = environmentOf(event);
  return { ...connect, VPN_EVENT: 'D', VPN_BYTES_IN: '0', VPN_BYTES_OUT: '0' };
}
