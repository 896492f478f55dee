// A stand-in WireGuard node that keeps the agent's own rule of revisions (src/agent/wireguard/
// revisions.ts), for tests of what reaches a node in which order: add_peer and remove_peer go
// through PeerRevisions as the agent's WireGuardService sends them, and the peers it holds are
// what those instructions left. No interface, no batching; a test may set what it heard before.
import type { ServerResponse } from 'node:http';
import { text } from 'node:stream/consumers';
import type { TestContext } from 'node:test';
import { PeerRevisions } from '../../src/agent/wireguard/revisions.js';
import { parseAddPeerForm, parseRemovePeerForm } from '../../src/protocol/vpn-daemon.js';
import { answerJson, startStandInNode } from './stand-in-node.js';

export interface RevisionNode {
  readonly url: string;
  /** Peers held now: key → allowed IPs. */
  readonly peers: Map<string, readonly string[]>;
  readonly revisions: PeerRevisions;
  /** Every instruction as it arrived, with whether it applied. */
  readonly log: { kind: 'add' | 'remove'; key: string; revision: number | null; applied: boolean }[];
}

function refuse(response: ServerResponse, error: string): void {
  response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error }));
}

/**
 * `nowMs`: the node's monotonic clock, which times how long it remembers a removal.
 * `beforeRemove`: what a removal waits for once it arrived, before the node looks at it (a
 * removal held up on its way, for a test to let other instructions overtake it); `beforeAdd`
 * the same for an add.
 */
export async function startRevisionNode(
  t: TestContext,
  options: {
    readonly nowMs?: () => number;
    readonly beforeRemove?: (publicKey: string) => Promise<void>;
    readonly beforeAdd?: (publicKey: string) => Promise<void>;
  } = {},
): Promise<RevisionNode> {
  const peers = new Map<string, readonly string[]>();
  const revisions = new PeerRevisions(options.nowMs);
  const log: RevisionNode['log'] = [];
  const add = (form: URLSearchParams, response: ServerResponse): void => {
    const parsed = parseAddPeerForm(form);
    if (!parsed.ok) {
      refuse(response, parsed.error);
      return;
    }
    const { publicKey, allowedIps, revision } = parsed.value;
    const applied = revisions.admit(publicKey, 'add', revision);
    log.push({ kind: 'add', key: publicKey, revision, applied });
    if (applied) peers.set(publicKey, allowedIps);
    response.writeHead(204).end();
  };
  const remove = (form: URLSearchParams, response: ServerResponse): void => {
    const parsed = parseRemovePeerForm(form);
    if (!parsed.ok) {
      refuse(response, parsed.error);
      return;
    }
    const { publicKey, revision } = parsed.value;
    const applied = revisions.admit(publicKey, 'remove', revision);
    log.push({ kind: 'remove', key: publicKey, revision, applied });
    const held = applied ? peers.get(publicKey) : undefined;
    if (applied) peers.delete(publicKey);
    if (held === undefined) response.writeHead(204).end();
    else answerJson(response, { public_key: publicKey, ip_net: held, bytes_in: 0, bytes_out: 0 });
  };
  const url = await startStandInNode(t, (path, response) => {
    if (path === '/i/node')
      answerJson(response, {
        rel_load_average: [0],
        load_average: [0],
        cpu_count: 1,
        node_uptime: 1,
        maintenance_mode: false,
        w_peer_count: peers.size,
        o_client_count: 0,
        max_revision: revisions.highest,
        v: 'stand-in',
      });
    else if (path === '/w/peer_list')
      answerJson(response, {
        peer_list: [...peers].map(([key, ipNet]) => ({ public_key: key, ip_net: ipNet, bytes_in: 0, bytes_out: 0 })),
      });
    else if (path === '/w/add_peer')
      void text(response.req).then(async (body) => {
        const form = new URLSearchParams(body);
        await options.beforeAdd?.(form.get('public_key') ?? '');
        add(form, response);
      });
    else if (path === '/w/remove_peer')
      void text(response.req).then(async (body) => {
        const form = new URLSearchParams(body);
        await options.beforeRemove?.(form.get('public_key') ?? '');
        remove(form, response);
      });
    else return false;
    return true;
  });
  return { url, peers, revisions, log };
}
