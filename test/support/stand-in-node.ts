// A node the portal talks to that is a local HTTP server of the test's own, for what a real agent
// will not do on demand (list more than the portal reads, hang on one call): `/i/node` answered as
// an idle node does unless the test's answer takes the request, anything it leaves a 404; and a
// test portal whose one profile is served by it.
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { startTestPortal, type TestPortal, type TestPortalOptions } from './test-portal.js';

/**
 * Answers a request to the node, or leaves it unanswered (a hung node); answers false to let the
 * stand-in answer it (`/i/node`, else 404).
 */
export type StandInAnswer = (path: string, response: ServerResponse) => boolean;

/** Starts the stand-in node, closed when the test ends; answers its URL. */
export async function startStandInNode(t: TestContext, answer: StandInAnswer): Promise<string> {
  const server = createServer((request, response) => {
    request.resume();
    const path = new URL(request.url ?? '/', 'http://node').pathname;
    if (answer(path, response)) return;
    if (path === '/i/node')
      return answerJson(response, {
        rel_load_average: [0],
        load_average: [0],
        cpu_count: 1,
        node_uptime: 1,
        w_peer_count: 0,
      });
    response.writeHead(404).end('{"error":"not found"}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export function answerJson(response: ServerResponse, body: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/**
 * A test portal whose one profile is served by the node at `nodeUrl`, closed when the test ends;
 * `options.config` is merged over it (anything but the profile).
 */
export async function startPortalOnStandIn(
  t: TestContext,
  nodeUrl: string,
  options: Omit<TestPortalOptions, 'config'> & {
    readonly config?: Omit<NonNullable<TestPortalOptions['config']>, 'ProfileList'>;
  } = {},
): Promise<TestPortal> {
  const portal = await startTestPortal({
    ...options,
    config: {
      ...options.config,
      ProfileList: [
        {
          profileId: 'employees',
          displayName: 'Employees',
          hostName: 'vpn.example.org',
          wRangeFour: '10.46.0.0/24',
          wRangeSix: 'fd46::/64',
          nodeUrl,
        },
      ],
    },
  });
  t.after(() => portal.close());
  return portal;
}
