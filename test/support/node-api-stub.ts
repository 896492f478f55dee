// A minimal real HTTP server that plays the portal's Node API for node agent tests: it checks
// the node number and node key like the portal does and answers `server_config` with whatever
// the test sets. The real portal replaces it in the end-to-end test.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ServerConfigRequest {
  readonly nodeNumber: string | undefined;
  readonly profileIdList: readonly string[];
}

export interface NodeApiStub {
  /** The `apiUrl` for the agent's configuration. */
  readonly apiUrl: string;
  readonly requests: readonly ServerConfigRequest[];
  /** What the next server_config calls answer: a JSON body, or an HTTP status with an error. */
  answer(next: { readonly json: unknown } | { readonly status: number; readonly error: string }): void;
  close(): Promise<void>;
}

export async function startNodeApiStub(options: {
  readonly nodeKey: string;
  readonly nodeNumber?: number;
  readonly host?: string;
  readonly initialAnswer: { readonly json: unknown } | { readonly status: number; readonly error: string };
}): Promise<NodeApiStub> {
  let answer = options.initialAnswer;
  const requests: ServerConfigRequest[] = [];

  const server = createServer((request, response) => {
    void readBody(request).then((body) => {
      const reply = (status: number, json: unknown): void => {
        response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
      };
      if (request.method !== 'POST' || request.url !== '/vpn-user-portal/node-api.php/server_config') {
        reply(404, { error: 'not found' });
        return;
      }
      const nodeNumber = request.headers['x-node-number'];
      const form = new URLSearchParams(body);
      requests.push({ nodeNumber: typeof nodeNumber === 'string' ? nodeNumber : undefined, profileIdList: form.getAll('profile_id_list') });
      if (request.headers.authorization !== `Bearer ${options.nodeKey}` || nodeNumber !== String(options.nodeNumber ?? 0)) {
        reply(401, { error: 'authentication required' });
        return;
      }
      if ('json' in answer) reply(200, answer.json);
      else reply(answer.status, { error: answer.error });
    });
  });
  server.listen(0, options.host ?? '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { address, port } = server.address() as AddressInfo;

  return {
    apiUrl: `http://${address}:${port}/vpn-user-portal/node-api.php`,
    requests,
    answer(next) {
      answer = next;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
