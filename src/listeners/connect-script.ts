// The reference's script hook (`connectScriptPath`, reference §9.4): a program run at every
// connect and disconnect with the session in `VPN_*` environment variables. A connect of an
// OpenVPN client waits for it, and a non-zero exit (or a script still running after
// `connectScriptTimeout`, which is then killed) refuses the client; one the node stopped waiting
// for, or whose configuration was revoked while the script ran, is refused too, after its "C",
// and gets its "D" at once. Everything else runs after
// the change is durable and never holds up an Admin API call; its failures are logged.
// WireGuard has no connect to refuse: its sessions start from handshakes
// (core/sessions/wireguard.ts), so the script hears of them, later, but cannot veto them.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import { ListenerRefusal, type PortalEvent, type PortalEvents } from '../core/events.js';
import { messageOf } from '../shared/error-message.js';

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

/**
 * Runs the script and answers when it exits. Not execFile: that answers when the script's output
 * pipes close, so a script that exits at once but leaves a process in the background (which
 * inherits the pipes) was waited for until the timeout, and one that wrote more than a megabyte
 * was killed and refused; its output was never used. The script leads a process group of its
 * own, so that a script still running after the timeout is killed with everything it started,
 * not leaving a `sleep` or a `curl` behind at every hung connect.
 */
function run(script: ConnectScript, env: Record<string, string>): Promise<Outcome> {
  return new Promise((resolve) => {
    let timedOut = false;
    let settled = false;
    const settle = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    let child: ChildProcess;
    try {
      child = spawn(script.path, [], {
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env },
        stdio: 'ignore',
        detached: true,
      });
    } catch (error) {
      resolve({ ok: false, reason: messageOf(error) });
      return;
    }
    const timer = setTimeout(() => {
      timedOut = true;
      killProcessGroup(child.pid);
    }, script.timeoutMs);
    child.once('error', (error) => settle({ ok: false, reason: error.message }));
    child.once('exit', (code, signal) => {
      if (timedOut) settle({ ok: false, reason: `still running after ${script.timeoutMs} ms; killed` });
      else if (code === 0) settle({ ok: true });
      else if (code !== null) settle({ ok: false, reason: `exited with ${code}` });
      else settle({ ok: false, reason: `ended by ${signal ?? 'a signal'}` });
    });
  });
}

/** SIGKILL to the script's process group: the script and every process it started that is still in it. */
function killProcessGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Gone already.
  }
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
