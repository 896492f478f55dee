// The reference's script hook (`connectScriptPath`, reference §9.4): a program run at every
// connect and disconnect with the session in `VPN_*` environment variables. A connect of an
// OpenVPN client waits for it, and a non-zero exit (or a script still running after
// `connectScriptTimeout`, which is then killed) refuses the client; one the node stopped waiting
// for, or whose configuration was revoked while the script ran, is refused too, after its "C",
// and gets its "D" at once. Everything else runs after
// the change is durable and never holds up an Admin API call; its failures are logged.
// WireGuard has no connect to refuse: its sessions start from handshakes
// (core/sessions/wireguard.ts), so the script hears of them, later, but cannot veto them.
// At most CONNECT_SCRIPT_CONCURRENCY copies run at once, the others wait their turn in order: a
// restart or a mass disconnect that ends thousands of sessions at once would otherwise fork
// thousands of processes at once and could take the host down. Runs about one connection or one
// address run one after the other, never side by side: a script that maps an address to a user
// at "C" and unmaps it at "D" (a firewall, a NAT log) must not have a quick session's "D" finish
// before its "C", nor a reconnect's "C" before the previous session's "D".
import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import { ListenerRefusal, type PortalEvent, type PortalEvents } from '../core/events.js';
import { messageOf } from '../shared/error-message.js';
import { elapsedSince, monotonicNow, type MonotonicMs } from '../shared/monotonic.js';

export interface ConnectScript {
  readonly path: string;
  readonly timeoutMs: number;
}

/** How many copies of the script run at once; the events beyond wait their turn, in order. */
export const CONNECT_SCRIPT_CONCURRENCY = 16;

/** How long a stopping portal waits for the scripts running and waiting to end. */
const STOP_DRAIN_MS = 5_000;

/** Answers the portal's stop: waits a moment for the scripts, then runs none of those still waiting. */
export interface ConnectScriptRuns {
  stop(): Promise<void>;
}

export function runConnectScript(events: PortalEvents, script: ConnectScript, logger: Logger): ConnectScriptRuns {
  const runs = new BoundedRuns(script, CONNECT_SCRIPT_CONCURRENCY, logger);
  events.approval(async (event) => {
    if (event.type !== 'session.started' || event.configuration.vpnProto !== 'openvpn') return;
    // The client waits: the time spent waiting for a place counts against connectScriptTimeout.
    const outcome = await runs.run(environmentOf(event), 'waitCounts');
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
    const outcome = await runs.run(withdrawnEnvironmentOf(event), 'waitFree');
    if (!outcome.ok)
      logger.warn(
        {
          script: script.path,
          event: 'withdrawn connect',
          connectionId: event.configuration.connectionId,
          reason: outcome.reason,
        },
        'connect script failed',
      );
  });
  events.afterCommit(async (event) => {
    if (event.type === 'session.started' && event.configuration.vpnProto === 'openvpn') return; // already run, above
    if (event.type !== 'session.started' && event.type !== 'session.ended') return;
    const outcome = await runs.run(environmentOf(event), 'waitFree');
    if (!outcome.ok)
      logger.warn(
        {
          script: script.path,
          event: event.type,
          connectionId: event.type === 'session.started' ? event.configuration.connectionId : event.connectionId,
          reason: outcome.reason,
        },
        'connect script failed',
      );
  });
  return runs;
}

/**
 * Whether the time a run waits for a place counts against connectScriptTimeout: it does for a
 * connect the client waits for (its answer must come within the timeout, or the node gives up
 * anyway), not for what runs after the change (nobody waits; the script gets its whole timeout).
 */
type WaitKind = 'waitCounts' | 'waitFree';

interface Waiting {
  readonly env: Record<string, string>;
  /** What the run is about (its connection, its addresses): runs sharing one never overlap. */
  readonly subjects: readonly string[];
  readonly queuedAt: MonotonicMs;
  readonly kind: WaitKind;
  readonly resolve: (outcome: Outcome) => void;
  /** A connect's deadline while it waits (waitCounts): refused without running once it passes. */
  timer: NodeJS.Timeout | undefined;
}

/**
 * The script's runs, at most `limit` at once; the others wait in the order they came, and a run
 * sharing a subject with one running or waiting ahead of it waits for that one to end (so a
 * connection's "D" starts only once the "C" it follows has ended). Each waiting run is started
 * once, or answered without running (a connect whose timeout passed while it waited, a run still
 * waiting when the portal stopped), never both.
 */
class BoundedRuns implements ConnectScriptRuns {
  readonly #script: ConnectScript;
  readonly #limit: number;
  readonly #logger: Logger;
  /** In arrival order (a Set keeps it, and lets a connect that gave up leave from the middle). */
  readonly #waiting = new Set<Waiting>();
  /** The subjects of the runs under way. */
  readonly #busySubjects = new Set<string>();
  #running = 0;
  #stopped = false;
  /** Told when nothing runs or waits any more (a stop waiting for the drain). */
  #onIdle: (() => void) | undefined;

  constructor(script: ConnectScript, limit: number, logger: Logger) {
    this.#script = script;
    this.#limit = limit;
    this.#logger = logger;
  }

  run(env: Record<string, string>, kind: WaitKind): Promise<Outcome> {
    if (this.#stopped) return Promise.resolve({ ok: false, reason: 'not run: the portal is stopping' });
    return new Promise((resolve) => {
      const waiting: Waiting = {
        env,
        subjects: subjectsOf(env),
        queuedAt: monotonicNow(),
        kind,
        resolve,
        timer: undefined,
      };
      this.#waiting.add(waiting);
      if (kind === 'waitCounts')
        waiting.timer = setTimeout(() => {
          if (!this.#waiting.delete(waiting)) return; // started meanwhile
          resolve({
            ok: false,
            reason: `not run: no place within ${this.#script.timeoutMs} ms (${this.#limit} scripts at once, one at a time per connection and address)`,
          });
          this.#checkIdle();
        }, this.#script.timeoutMs);
      this.#startWaiting();
    });
  }

  async stop(): Promise<void> {
    if (this.#running > 0 || this.#waiting.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.#onIdle = resolve;
        timer = setTimeout(resolve, STOP_DRAIN_MS);
      });
      clearTimeout(timer);
      this.#onIdle = undefined;
    }
    this.#stopped = true;
    const notRun = [...this.#waiting];
    this.#waiting.clear();
    if (notRun.length > 0)
      this.#logger.warn(
        { script: this.#script.path, notRun: notRun.length, running: this.#running },
        'the portal stopped with connect script runs still waiting: they are not run',
      );
    for (const waiting of notRun) {
      clearTimeout(waiting.timer);
      waiting.resolve({ ok: false, reason: 'not run: the portal stopped' });
    }
  }

  #startWaiting(): void {
    /** Subjects of the runs passed over: a later run about one of them keeps its place behind. */
    const heldBack = new Set<string>();
    for (const waiting of this.#waiting) {
      if (this.#running >= this.#limit || this.#stopped) return;
      if (waiting.subjects.some((subject) => this.#busySubjects.has(subject) || heldBack.has(subject))) {
        for (const subject of waiting.subjects) heldBack.add(subject);
        continue;
      }
      this.#waiting.delete(waiting);
      clearTimeout(waiting.timer);
      this.#running++;
      for (const subject of waiting.subjects) this.#busySubjects.add(subject);
      const waited = elapsedSince(waiting.queuedAt);
      const timeoutMs =
        waiting.kind === 'waitCounts' ? Math.max(1, this.#script.timeoutMs - waited) : this.#script.timeoutMs;
      void run(this.#script.path, waiting.env, timeoutMs).then((outcome) => {
        this.#running--;
        for (const subject of waiting.subjects) this.#busySubjects.delete(subject);
        waiting.resolve(
          outcome.ok || waiting.kind === 'waitFree' || waited < 1 ? outcome : waitedToo(outcome.reason, waited),
        );
        this.#startWaiting();
        this.#checkIdle();
      });
    }
  }

  #checkIdle(): void {
    if (this.#running === 0 && this.#waiting.size === 0) this.#onIdle?.();
  }
}

/** The connection and the addresses a run is about. */
function subjectsOf(env: Record<string, string>): string[] {
  const subjects = [
    ['connection', env['VPN_CONNECTION_ID']],
    ['address', env['VPN_IP_FOUR']],
    ['address', env['VPN_IP_SIX']],
  ];
  return subjects.filter(([, value]) => value !== undefined && value !== '').map(([kind, value]) => `${kind} ${value}`);
}

/** A connect that waited for a place and was then refused: the wait is part of the story. */
function waitedToo(reason: string, waitedMs: number): Outcome {
  return { ok: false, reason: `${reason} (after ${Math.round(waitedMs)} ms waiting for a place)` };
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
function run(scriptPath: string, env: Record<string, string>, timeoutMs: number): Promise<Outcome> {
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
      child = spawn(scriptPath, [], {
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
    }, timeoutMs);
    child.once('error', (error) => settle({ ok: false, reason: error.message }));
    child.once('exit', (code, signal) => {
      if (timedOut) settle({ ok: false, reason: `still running after ${Math.round(timeoutMs)} ms; killed` });
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
