// Where this node's recently connected devices were, so a node that lost its peers (the agent
// or wireguard-go restarted, the host rebooted) can greet them again at once. WireGuard's
// client only starts a new handshake after 15 s without an answer; once the portal has given
// a peer back, the agent sets the peer's last known endpoint and sends one datagram into the
// tunnel, which makes the node start the handshake itself, so the device's traffic flows again
// within a second or two instead.
//
// Only endpoints of peers with a handshake in the last 3 minutes are kept, in a file (0600)
// that survives a restart. The memory never decides which peers exist: a hint is used only
// for a peer the portal adds, once, right after the interface came up empty; a removal
// forgets the hint.
import { createSocket } from 'node:dgram';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import { isOnline } from '../../shared/online.js';
import type { WgPeer } from './dump.js';

const fileSchema = z.object({ endpoints: z.record(z.string(), z.string()) });
/** The discard port: nothing answers, the datagram only has to enter the tunnel. */
const DISCARD_PORT = 9;

export class EndpointMemory {
  readonly #file: string;
  readonly #logger: Logger;
  /** Public key → `IP:port` of peers seen recently. */
  #known = new Map<string, string>();
  /** Hints for the peers the portal is about to give back after the interface came up empty. */
  #restoring = new Map<string, string>();
  #saving: Promise<void> = Promise.resolve();

  constructor(file: string, logger: Logger) {
    this.#file = file;
    this.#logger = logger;
  }

  /** Reads what the previous run remembered; a missing or broken file is an empty memory. */
  async load(): Promise<void> {
    try {
      const parsed = fileSchema.safeParse(JSON.parse(await readFile(this.#file, 'utf8')));
      if (parsed.success) this.#known = new Map(Object.entries(parsed.data.endpoints));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
        this.#logger.warn({ file: this.#file, reason: (error as Error).message }, 'ignoring the endpoint memory file');
    }
  }

  /** The interface came up without peers: the next add of each remembered peer may use its hint. */
  interfaceEmptied(): void {
    this.#restoring = new Map(this.#known);
  }

  /** Learns the endpoints of the peers online now, and keeps them on disk. */
  observe(peers: readonly WgPeer[], now: Date): void {
    const next = new Map<string, string>();
    for (const peer of peers) {
      if (peer.endpoint !== null && isOnline(peer.latestHandshake, now)) next.set(peer.publicKey, peer.endpoint);
    }
    // While peers are being given back, their hints are not yet observable: keep them.
    for (const [key, endpoint] of this.#restoring) if (!next.has(key)) next.set(key, endpoint);
    if (sameEntries(next, this.#known)) return;
    this.#known = next;
    this.#save();
  }

  /** The endpoint to set on a peer being given back, once; null for any other add. */
  takeHint(publicKey: string): string | null {
    const endpoint = this.#restoring.get(publicKey) ?? null;
    this.#restoring.delete(publicKey);
    return endpoint;
  }

  forget(publicKey: string): void {
    this.#restoring.delete(publicKey);
    if (this.#known.delete(publicKey)) this.#save();
  }

  /** Sends one datagram to the peer's tunnel address, so the node starts a handshake with it. */
  greet(allowedIps: readonly string[]): void {
    const address =
      allowedIps.find((cidr) => cidr.endsWith('/32'))?.slice(0, -3) ??
      allowedIps.find((cidr) => cidr.endsWith('/128'))?.slice(0, -4);
    if (address === undefined) return;
    const socket = createSocket(address.includes(':') ? 'udp6' : 'udp4');
    socket.on('error', () => socket.close());
    socket.send(Buffer.alloc(0), DISCARD_PORT, address, () => socket.close());
  }

  /** Waits for the last write (stop() calls this). */
  async flush(): Promise<void> {
    await this.#saving;
  }

  #save(): void {
    const content = `${JSON.stringify({ endpoints: Object.fromEntries(this.#known) })}\n`;
    this.#saving = this.#saving
      .then(async () => {
        await mkdir(dirname(this.#file), { recursive: true, mode: 0o700 });
        // Written aside and renamed: a crash mid-write never leaves a half file.
        const temporary = `${this.#file}.tmp`;
        await writeFile(temporary, content, { mode: 0o600 });
        await rename(temporary, this.#file);
      })
      .catch((error: unknown) => {
        this.#logger.warn(
          { file: this.#file, reason: (error as Error).message },
          'cannot write the endpoint memory file',
        );
      });
  }
}

function sameEntries(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, value] of a) if (b.get(key) !== value) return false;
  return true;
}
