// A reconcile pass that gives a real node agent back its peers sends them in add_peers requests
// when the agent advertises the call (`add_peers_max` in /i/node), and one add_peer per peer
// when it does not, as to eduVPN's vpn-daemon. A proxy between portal and agent counts the
// calls, and can hide the advertisement.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { text } from 'node:stream/consumers';
import { test, type TestContext } from 'node:test';
import type { PortalConfigFile } from '../../../src/config/schema.js';
import { startPortalWithNode } from '../../support/portal-with-node.js';

const PEERS = 150;

const employees: PortalConfigFile['ProfileList'][number] = {
  profileId: 'employees',
  displayName: 'Employees',
  hostName: 'vpn.example.org',
  wRangeFour: '10.46.0.0/24',
  wRangeSix: 'fd46::/64',
  defaultGateway: false,
};

interface CountingProxy {
  readonly url: string;
  /** Path of every request forwarded, in order. */
  readonly paths: string[];
  /** Whether /i/node answers without `add_peers_max`, as eduVPN's vpn-daemon does. */
  hideAddPeers: boolean;
}

/** Forwards every request to `target` (set once the agent's URL is known). */
async function startCountingProxy(t: TestContext, target: () => string): Promise<CountingProxy> {
  const proxy: CountingProxy = { url: '', paths: [], hideAddPeers: false };
  const server = createServer((request, response) => {
    void (async () => {
      const body = await text(request);
      const path = request.url ?? '/';
      proxy.paths.push(path);
      const headers = Object.fromEntries(
        ['authorization', 'content-type'].flatMap((name) => {
          const value = request.headers[name];
          return typeof value === 'string' ? [[name, value]] : [];
        }),
      );
      const answer = await fetch(new URL(path, target()), {
        method: request.method ?? 'GET',
        headers,
        ...(request.method === 'GET' ? {} : { body }),
      });
      let answerText = await answer.text();
      if (proxy.hideAddPeers && path === '/i/node') {
        const { add_peers_max: _hidden, ...info } = JSON.parse(answerText) as Record<string, unknown>;
        answerText = JSON.stringify(info);
      }
      const contentType = answer.headers.get('content-type');
      response.writeHead(answer.status, contentType === null ? {} : { 'content-type': contentType });
      response.end(answer.status === 204 ? undefined : answerText);
    })().catch((error: unknown) => response.destroy(error as Error));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return Object.assign(proxy, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}

test('a pass gives an empty agent its peers in add_peers requests, and one add_peer each when the node does not advertise the call', async (t) => {
  let agentUrl = '';
  const proxy = await startCountingProxy(t, () => agentUrl);
  const lab = await startPortalWithNode({
    config: (nodeUrl) => {
      agentUrl = nodeUrl;
      return { ProfileList: [{ ...employees, nodeUrl: proxy.url }] };
    },
  });
  t.after(lab.close);
  const { portal } = lab;
  for (let start = 0; start < PEERS; start += 16) {
    await Promise.all(
      Array.from({ length: Math.min(16, PEERS - start) }, async (_, offset) => {
        const response = await portal.post('/create', { user_id: `user${start + offset}`, profile_id: 'employees' });
        assert.equal(response.status, 200, response.text);
      }),
    );
  }
  const wanted = [...(await lab.peersOnNode()).keys()].sort();
  assert.equal(wanted.length, PEERS);

  /** Restarts the agent (it comes back empty) and runs a pass: the adds it sent, by path. */
  const addsToRestore = async (): Promise<string[]> => {
    await lab.stopAgent();
    await lab.startAgent();
    proxy.paths.length = 0;
    await portal.reconcile();
    assert.deepEqual([...(await lab.peersOnNode()).keys()].sort(), wanted, 'every peer is back');
    return proxy.paths.filter((path) => path.startsWith('/w/add_peer'));
  };

  // The pass sends the 150 peers in two requests of at most 128.
  assert.deepEqual(await addsToRestore(), ['/w/add_peers', '/w/add_peers']);

  // Without the advertisement (eduVPN's vpn-daemon), one add_peer per peer.
  proxy.hideAddPeers = true;
  const single = await addsToRestore();
  assert.equal(single.length, PEERS);
  assert.ok(
    single.every((path) => path === '/w/add_peer'),
    'no add_peers',
  );
});
