// The `wg` command line tool: dumps, keys, ports and peer changes, split to fit the argument limit.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WireGuardKey } from '../../shared/ids.js';
import { runChecked, type CommandRunner } from '../process/command-runner.js';
import type { Secret } from '../../shared/secret.js';
import { parseWgDump, type WgDump } from './dump.js';
import { sizeLimitedGroups } from '../../shared/size-limited-groups.js';

/** The end state of one peer after a batch: present with exactly these allowed IPs, or gone. */
export type PeerChange =
  | {
      readonly kind: 'set';
      readonly publicKey: WireGuardKey;
      readonly allowedIps: readonly string[];
      readonly endpoint?: string;
    }
  | { readonly kind: 'remove'; readonly publicKey: WireGuardKey };

// Linux allows 2 MiB of arguments plus environment by default; staying far below leaves room
// for a large environment and keeps each `wg` call short.
const DEFAULT_MAX_ARGUMENT_BYTES = 64 * 1024;
/**
 * A `wg` call that changes the interface gets as long as a control-socket write (peer-writer.ts):
 * the same operation, sent another way. A full read gets longer: most of a second of CPU at
 * wireguard-go's cap, and it may first wait for wireguard-go's lock behind a write of 10 s.
 * Past that, wireguard-go is taken for hung: the call is killed and fails.
 */
export const WG_WRITE_TIMEOUT_MS = 10_000;
export const WG_READ_TIMEOUT_MS = 30_000;

/** The `wg` command line tool, for one interface at a time. */
export class WgTool {
  readonly #runner: CommandRunner;
  readonly #maxArgumentBytes: number;

  constructor(runner: CommandRunner, options: { maxArgumentBytes?: number } = {}) {
    this.#runner = runner;
    this.#maxArgumentBytes = options.maxArgumentBytes ?? DEFAULT_MAX_ARGUMENT_BYTES;
  }

  async dump(interfaceName: string): Promise<WgDump> {
    const result = await runChecked(this.#runner, 'wg', ['show', interfaceName, 'dump'], {
      timeoutMs: WG_READ_TIMEOUT_MS,
    });
    return parseWgDump(result.stdout);
  }

  /** True when `wg` can talk to the interface (kernel netlink or a userspace socket). */
  async isReachable(interfaceName: string): Promise<boolean> {
    const result = await this.#runner.run('wg', ['show', interfaceName, 'listen-port'], {
      timeoutMs: WG_WRITE_TIMEOUT_MS,
    });
    return result.exitCode === 0;
  }

  /**
   * `wg` reads the private key from a file: a 0600 file in a fresh 0700 directory, removed
   * right after. (/dev/stdin does not work: Node's stdio pipes are sockets, which wg cannot open.)
   */
  async setPrivateKeyAndListenPort(interfaceName: string, privateKey: Secret, listenPort: number): Promise<void> {
    const directory = await mkdtemp(join(tmpdir(), 'vpn-node-wg-'));
    try {
      const keyFile = join(directory, 'private.key');
      await writeFile(keyFile, `${privateKey.reveal()}\n`, { mode: 0o600, flag: 'wx' });
      await runChecked(
        this.#runner,
        'wg',
        ['set', interfaceName, 'private-key', keyFile, 'listen-port', String(listenPort)],
        { timeoutMs: WG_WRITE_TIMEOUT_MS },
      );
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }

  async setListenPort(interfaceName: string, listenPort: number): Promise<void> {
    await runChecked(this.#runner, 'wg', ['set', interfaceName, 'listen-port', String(listenPort)], {
      timeoutMs: WG_WRITE_TIMEOUT_MS,
    });
  }

  /**
   * Applies many peer changes with as few `wg set` calls as the argument size allows.
   * `allowed-ips` on `wg set` replaces the peer's list, so re-adding a peer moves it.
   * Returns the number of `wg` processes started.
   */
  async applyPeerChanges(interfaceName: string, changes: readonly PeerChange[]): Promise<number> {
    const chunks = this.#chunk(interfaceName, changes.map(peerArguments));
    for (const chunk of chunks) {
      await runChecked(this.#runner, 'wg', ['set', interfaceName, ...chunk], { timeoutMs: WG_WRITE_TIMEOUT_MS });
    }
    return chunks.length;
  }

  /** Per-peer arguments in `wg set` command lines of at most #maxArgumentBytes each. */
  #chunk(interfaceName: string, perPeerArguments: readonly string[][]): string[][] {
    const fixedBytes = argumentBytes(['wg', 'set', interfaceName]);
    return sizeLimitedGroups(perPeerArguments, argumentBytes, this.#maxArgumentBytes - fixedBytes).map((peers) =>
      peers.flat(),
    );
  }
}

function peerArguments(change: PeerChange): string[] {
  if (change.kind === 'remove') return ['peer', change.publicKey, 'remove'];
  const endpoint = change.endpoint === undefined ? [] : ['endpoint', change.endpoint];
  return ['peer', change.publicKey, 'allowed-ips', change.allowedIps.join(','), ...endpoint];
}

/** Bytes the kernel counts for argv: each string plus its terminating NUL and pointer. */
function argumentBytes(args: readonly string[]): number {
  return args.reduce((sum, arg) => sum + Buffer.byteLength(arg) + 1 + 8, 0);
}
