// A stand-in WireGuard node that keeps the agent's own rule of revisions (src/agent/wireguard/
// revisions.ts), for tests of what reaches a node in which order: add_peer and remove_peer go
// through PeerRevisions as the agent's WireGuardService sends them, and the peers it holds are
// what those instructions left. No interface, no batching; a test may set what it heard before.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { PeerRevisions } from '../../src/agent/wireguard/revisions.js';
import { parseAddPeerForm, parseRemovePeerForm } from '../../src/protocol/vpn-daemon.js';

export interface RevisionNode {
  readonly url: string;
  /** Peers held now: key → allowed IPs. */
  readonly peers: Map<string, readonly string[]>;
  readonly revisions: PeerRevisions;
  /** Every instruction as it arrived, with whether it applied. */
  readonly log: { kind: 'add' | 'remove'; key: string; revision: number | null; applied: boolean }[];
}

async function bodyOf(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

export async function startRevisionNode(t: TestContext): Promise<RevisionNode> {
  const peers = new Map<string, readonly string[]>();
  const revisions = new PeerRevisions();
  const log: RevisionNode['log'] = [];
  const server = createServer((request, response) => {
    void (async () => {
      const path = new URL(request.url ?? '/', 'http://node').pathname;
      const form = await bodyOf(request);
      if (path === '/i/node')
        return json(response, 200, {
          rel_load_average: [0],
          load_average: [0],
          cpu_count: 1,
          node_uptime: 1,
          maintenance_mode: false,
          w_peer_count: peers.size,
          o_client_count: 0,
          max_revision: revisions.highest,
          v: 'review',
        });
      if (path === '/w/peer_list')
        return json(response, 200, {
          peer_list: [...peers].map(([key, ipNet]) => ({ public_key: key, ip_net: ipNet, bytes_in: 0, bytes_out: 0 })),
        });
      if (path === '/w/add_peer') {
        const parsed = parseAddPeerForm(form);
        if (!parsed.ok) return json(response, 400, { error: parsed.error });
        const { publicKey, allowedIps, revision } = parsed.value;
        const applied = revisions.admit(publicKey, 'add', revision);
        log.push({ kind: 'add', key: publicKey, revision, applied });
        if (applied) peers.set(publicKey, allowedIps);
        return response.writeHead(204).end();
      }
      if (path === '/w/remove_peer') {
        const parsed = parseRemovePeerForm(form);
        if (!parsed.ok) return json(response, 400, { error: parsed.error });
        const { publicKey, revision } = parsed.value;
        const applied = revisions.admit(publicKey, 'remove', revision);
        log.push({ kind: 'remove', key: publicKey, revision, applied });
        const held = applied ? peers.get(publicKey) : undefined;
        if (applied) peers.delete(publicKey);
        if (held === undefined) return response.writeHead(204).end();
        return json(response, 200, { public_key: publicKey, ip_net: held, bytes_in: 0, bytes_out: 0 });
      }
      json(response, 404, { error: 'not found' });
    })();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, peers, revisions, log };
}
