// The agent benchmark's sender, a process of its own so the agent's event loop has the
// benchmark process to itself (as on a node, where the portal is elsewhere): reads its input
// as JSON on stdin, sends every add_peer with the portal's daemon client, prints the seconds.
import { text } from 'node:stream/consumers';
import { HttpNodeDaemon } from '../src/node-client/daemon-client.js';
import { asNodeNumber, asWireGuardKey } from '../src/shared/ids.js';

export interface SenderInput {
  readonly url: string;
  readonly secret: string;
  readonly inFlight: number;
  readonly peers: readonly { readonly publicKey: string; readonly ipFour: string; readonly ipSix: string }[];
}

const input = JSON.parse(await text(process.stdin)) as SenderInput;
const daemon = new HttpNodeDaemon({
  nodeNumber: asNodeNumber(0),
  url: input.url,
  secret: () => input.secret,
  timeoutMs: 60_000,
  connections: input.inFlight,
});
let next = 0;
const sender = async (): Promise<void> => {
  while (next < input.peers.length) {
    const peer = input.peers[next++];
    if (peer === undefined) return;
    await daemon.addPeer(asWireGuardKey(peer.publicKey), [`${peer.ipFour}/32`, `${peer.ipSix}/128`], 1);
  }
};
const started = performance.now();
await Promise.all(Array.from({ length: input.inFlight }, sender));
console.log(JSON.stringify({ seconds: (performance.now() - started) / 1000 }));
await daemon.close();
