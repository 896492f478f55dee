// Caps the open connections of each source address on the portal's HTTP server (Admin API and
// Node API share it), so one host holding thousands of slow connections cannot use up the
// process's file descriptors while everyone else's calls fail. Reverse proxies listed as
// trusted carry many clients on one address and are not capped: they hold their own slow
// clients and have their own limits. An IPv6 client counts by its /64, as the limit on
// requests per address does: one host may take any address of its /64, and would otherwise hold
// the cap's connections from each of them.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import type { AddressAllowList } from '../../net/address-allow-list.js';
import { clientNetwork } from '../../net/client-network.js';
import { elapsedSince, monotonicNow, type MonotonicMs } from '../../shared/monotonic.js';

/**
 * A capped address is named in the log at most this often, however hard it keeps trying (on the
 * monotonic clock: a step of the wall clock neither repeats nor silences it).
 */
const WARNING_INTERVAL_MS = 60_000;

export interface ConnectionsPerAddressOptions {
  readonly maxPerAddress: number;
  /** Direct peers without a cap (the trusted reverse proxies). */
  readonly uncapped: AddressAllowList;
  readonly logger: Logger;
}

export class ConnectionsPerAddress {
  readonly #options: ConnectionsPerAddressOptions;
  readonly #open = new Map<string, number>();
  readonly #lastWarned = new Map<string, MonotonicMs>();

  constructor(options: ConnectionsPerAddressOptions) {
    this.#options = options;
  }

  /** Counts every connection `server` accepts; one beyond the cap is closed at once, unanswered. */
  install(server: Server): void {
    server.on('connection', (socket: Socket) => this.#admit(socket));
  }

  #admit(socket: Socket): void {
    const remote = socket.remoteAddress;
    if (remote === undefined) {
      socket.destroy(); // already gone
      return;
    }
    if (this.#options.uncapped.allows(remote)) return;
    const address = clientNetwork(remote);
    const open = this.#open.get(address) ?? 0;
    if (open >= this.#options.maxPerAddress) {
      this.#warn(address);
      socket.destroy();
      return;
    }
    this.#open.set(address, open + 1);
    socket.once('close', () => {
      const left = (this.#open.get(address) ?? 1) - 1;
      if (left > 0) this.#open.set(address, left);
      else this.#open.delete(address);
    });
  }

  #warn(address: string): void {
    const last = this.#lastWarned.get(address);
    if (last !== undefined && elapsedSince(last) < WARNING_INTERVAL_MS) return;
    // Many addresses hitting the cap at once: forget old entries rather than grow without end.
    if (this.#lastWarned.size >= 10_000) this.#lastWarned.clear();
    this.#lastWarned.set(address, monotonicNow());
    this.#options.logger.warn(
      { remoteAddress: address, maxConnectionsPerAddress: this.#options.maxPerAddress },
      'connection refused: the address has listen.maxConnectionsPerAddress connections open',
    );
  }
}
