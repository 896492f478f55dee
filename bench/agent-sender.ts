// The agent benchmark's sender, a process of its own so the agent's event loop has the
// benchmark process to itself (as on a node, where the portal is elsewhere): reads its input
// as JSON on stdin, sends every add with the portal's daemon client as its reconcile pass
// does (add_peers requests when the node advertises them, else one add_peer per peer),
// prints the seconds.
// The portal is a long-running process whose daemon client is warm; a fresh sender would spend
// its first thousands of calls warming its own code, CPU the agent then lacks on this 2-core
// machine. So the sender first warms its client on a stand-in node of its own; the agent gets
// no call before the measured ones.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { text } from 'node:stream/consumers';
import { PEERS_PER_ADD_REQUEST } from '../src/core/reconcile/pass.js';
import { HttpNodeDaemon } from '../src/node-client/daemon-client.js';
import { asNodeNumber, asWireGuardKey } from '../src/shared/ids.js';

export interface SenderInput {
  readonly url: string;
  readonly secret: string;
  readonly inFlight: number;
  readonly peers: readonly { readonly publicKey: string; readonly ipFour: string; readonly ipSix: string }[];
}

/** Calls the sender makes to its own stand-in before the measured ones. */
const WARM_UP_CALLS = 5_000;

const input = JSON.parse(await text(process.stdin)) as SenderInput;

function daemonAt(url: string): HttpNodeDaemon {
  return new HttpNodeDaemon({
    nodeNumber: asNodeNumber(0),
    url,
    secret: () => input.secret,
    timeoutMs: 60_000,
    connections: input.inFlight,
  });
}

/** Peers per request, as the pass chooses them: 1 is one add_peer per peer. */
const node = daemonAt(input.url);
const { addPeersMax } = await node.nodeInfo();
await node.close();
const perRequest = addPeersMax === null ? 1 : Math.min(addPeersMax, PEERS_PER_ADD_REQUEST);

/** Sends `count` adds (the peers in turn) to `url`, `inFlight` peers at a time. */
async function sendAddPeers(url: string, count: number): Promise<void> {
  const daemon = daemonAt(url);
  let next = 0;
  const sender = async (): Promise<void> => {
    while (next < count) {
      const peers = Array.from({ length: Math.min(perRequest, count - next) }, () => {
        const peer = input.peers[next++ % input.peers.length];
        if (peer === undefined) throw new Error('no peers to send');
        return {
          publicKey: asWireGuardKey(peer.publicKey),
          ipNet: [`${peer.ipFour}/32`, `${peer.ipSix}/128`],
          revision: 1,
        };
      });
      const [first] = peers;
      if (perRequest > 1) await daemon.addPeers(peers);
      else if (first !== undefined) await daemon.addPeer(first.publicKey, first.ipNet, first.revision);
    }
  };
  await Promise.all(Array.from({ length: Math.ceil(input.inFlight / perRequest) }, sender));
  await daemon.close();
}

const standIn = http.createServer((request, response) => {
  request.resume();
  request.on('end', () => response.writeHead(204).end());
});
await new Promise<void>((resolve) => standIn.listen(0, '127.0.0.1', resolve));
await sendAddPeers(`http://127.0.0.1:${(standIn.address() as AddressInfo).port}`, WARM_UP_CALLS);
await new Promise((resolve) => standIn.close(resolve));

const started = performance.now();
await sendAddPeers(input.url, input.peers.length);
console.log(JSON.stringify({ seconds: (performance.now() - started) / 1000 }));
