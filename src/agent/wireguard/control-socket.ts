// wireguard-go's control socket (the cross-platform userspace API, wireguard.com/xplatform):
// peer changes written as text straight to the interface, instead of a `wg set` process per batch.
import { connect } from 'node:net';
import { join } from 'node:path';
import { sizeLimitedGroups } from '../../shared/size-limited-groups.js';
import type { PeerChange } from './wg-tool.js';

/** Where wireguard-go puts its sockets and where `wg` looks for them. */
export const WIREGUARD_SOCKET_DIRECTORY = '/var/run/wireguard';

export function controlSocketPath(directory: string, interfaceName: string): string {
  return join(directory, `${interfaceName}.sock`);
}

/**
 * Nothing listens on the socket (no socket: kernel WireGuard; or a stale one whose wireguard-go
 * is gone). Nothing was written, so `wg` may decide instead, as it always did.
 */
export class ControlSocketAbsentError extends Error {
  constructor(path: string, code: string) {
    super(`no WireGuard control socket at ${path} (${code})`);
    this.name = 'ControlSocketAbsentError';
  }
}

/** A set operation that failed: refused by the interface (errno), or the socket broke or hung. */
export class ControlSocketError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ControlSocketError';
  }
}

/** The answer to every operation: `errno=N` and a blank line; 0 is success. */
const ANSWER = /^errno=(-?[0-9]+)\n\n$/;
/** An answer is a dozen bytes; anything longer is not one. */
const MAX_ANSWER_BYTES = 64;

/**
 * The changes as `set=1` operations of at most about `maxBytes` each (a peer is never split).
 * `wg set` writes the same keys: the key in hex, `replace_allowed_ips` so the list replaces the
 * peer's, `remove` for a removal.
 */
export function setOperations(changes: readonly PeerChange[], maxBytes: number): string[] {
  return sizeLimitedGroups(changes.map(peerLines), (peer) => peer.length, maxBytes).map(
    (peers) => `set=1\n${peers.join('')}\n`,
  );
}

function peerLines(change: PeerChange): string {
  const publicKey = `public_key=${Buffer.from(change.publicKey, 'base64').toString('hex')}\n`;
  if (change.kind === 'remove') return `${publicKey}remove=true\n`;
  let lines = `${publicKey}replace_allowed_ips=true\n`;
  for (const allowedIp of change.allowedIps) lines += `allowed_ip=${allowedIp}\n`;
  if (change.endpoint !== undefined) lines += `endpoint=${change.endpoint}\n`;
  return lines;
}

/**
 * Sends one operation on a connection of its own (wireguard-go reads one operation per
 * connection: it buffers past the first) and resolves once the interface answered errno=0.
 * `onUnanswered` learns of an operation that was sent but not answered within `timeoutMs`: it
 * fails the caller all the same, but wireguard-go may still apply it whenever it gets to the
 * connection (a stopped wireguard-go takes the queued connections in no fixed order), so the
 * connection stays open and the promise handed over settles once wireguard-go answered it or
 * went away.
 */
export function sendOperation(
  path: string,
  operation: string,
  timeoutMs: number,
  onUnanswered?: (answeredOrGone: Promise<void>) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let answer = '';
    let connected = false;
    let settled = false;
    const socket = connect(path);
    const closed = new Promise<void>((resolveClosed) => socket.once('close', () => resolveClosed()));
    const finish = (error: Error | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (error === null) resolve();
      else reject(error);
    };
    // A wireguard-go that hangs (stopped, overloaded) fails the batch instead of holding it forever.
    const timer = setTimeout(() => {
      const error = new ControlSocketError(`no answer on ${path} within ${timeoutMs} ms`);
      if (!connected || onUnanswered === undefined) {
        finish(error);
        return;
      }
      settled = true;
      // Kept open only to learn when wireguard-go got to it; it does not hold the agent's exit.
      socket.unref();
      onUnanswered(closed);
      reject(error);
    }, timeoutMs);
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      connected = true;
      socket.write(operation);
    });
    socket.on('data', (chunk: string) => {
      answer += chunk;
      if (!answer.endsWith('\n\n') && answer.length < MAX_ANSWER_BYTES) return;
      // The late answer of an operation the caller was already told failed: it has been applied.
      if (settled) {
        socket.destroy();
        return;
      }
      const match = ANSWER.exec(answer);
      // Not echoed: whatever answers there, its text is not ours to log (a dump holds the private key).
      if (match === null)
        finish(new ControlSocketError(`unexpected answer on ${path} (${answer.length} characters, not errno=N)`));
      else if (match[1] === '0') finish(null);
      // wireguard-go answers a negative errno (-22 for invalid input), `wg` prints it positive.
      else finish(new ControlSocketError(`the interface refused the change: errno ${Math.abs(Number(match[1]))}`));
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      const code = error.code ?? 'error';
      if (!connected && (code === 'ENOENT' || code === 'ECONNREFUSED'))
        finish(new ControlSocketAbsentError(path, code));
      else finish(new ControlSocketError(`the control socket ${path} failed: ${error.message}`));
    });
    socket.on('close', () => {
      if (!settled) finish(new ControlSocketError(`the control socket ${path} closed without an answer`));
    });
  });
}
