// A node listing within its byte cap may still hold millions of tiny JSON values (`[0,0,…]`,
// `[{},{},…]`), which JSON.parse would build all at once: more than the portal's 192 MB heap.
// The client counts the values first and refuses a listing of more than one per 8 bytes of its
// cap unparsed, with an error that says so; real listings are far below it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import {
  ANSWER_BYTES_PER_JSON_VALUE,
  HttpNodeDaemon,
  LIST_ANSWER_BYTES,
  NodeDaemonError,
} from '../../src/node-client/daemon-client.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';
import { TSX } from '../support/logged-process.js';
import { startStandInNode } from '../support/stand-in-node.js';

/** `{"<name>":[entry,entry,…]}` with `count` entries. */
function listing(name: string, entry: string, count: number): string {
  return `{"${name}":[${Array.from({ length: count }, () => entry).join(',')}]}`;
}

/** As many entries as fit `bytes`. */
function filling(name: string, entry: string, bytes: number): string {
  const framing = `{"${name}":[]}`.length;
  return listing(name, entry, Math.floor((bytes - framing + 1) / (entry.length + 1)));
}

test('a listing may hold one JSON value per 8 bytes of its cap: one more is refused unparsed, saying so, and real peers filling the cap are read', async (t) => {
  const cap = 8_000;
  const maxValues = cap / ANSWER_BYTES_PER_JSON_VALUE;
  const peer = (publicKey: string) =>
    JSON.stringify({ public_key: publicKey, ip_net: ['10.0.0.2/32', 'fd00::2/128'], bytes_in: 0, bytes_out: 0 });
  const answers = new Map<string, string>();
  const url = await startStandInNode(t, (path, response) => {
    const text = answers.get(path);
    if (text === undefined) return false;
    response.writeHead(200, { 'content-type': 'application/json' }).end(text);
    return true;
  });
  const daemon = new HttpNodeDaemon({
    nodeNumber: asNodeNumber(2),
    url,
    secret: () => null,
    timeoutMs: 5_000,
    maxAnswerBytes: cap,
  });
  t.after(() => daemon.close());

  // The object, the list and the commas between its entries: 999 zeros are 1,000 values.
  answers.set('/w/peer_list', listing('peer_list', '0', maxValues - 1));
  await assert.rejects(
    daemon.peerList(true),
    /unexpected answer \(peer_list\.0\./,
    'at the bound the listing is parsed (and its entries checked)',
  );
  answers.set('/w/peer_list', listing('peer_list', '0', maxValues));
  await assert.rejects(daemon.peerList(true), (error: unknown) => {
    assert.ok(error instanceof NodeDaemonError);
    assert.equal(error.answered, true, 'the node answered');
    assert.match(
      error.message,
      /\/w\/peer_list\?show_all=yes: answer holds more than 1000 JSON values \(arrays, objects and entries; one per 8 bytes of its 8000-byte cap\): refused without parsing it$/,
    );
    return true;
  });
  answers.set('/o/connection_list', listing('connection_list', '{}', maxValues / 2));
  await assert.rejects(daemon.openVpnConnectionList(), /answer holds more than 1000 JSON values/);

  const keys = Array.from({ length: 60 }, () => generateWireGuardKeyPair().publicKey);
  const peers = `{"peer_list":[${keys.map(peer).join(',')}]}`;
  assert.ok(peers.length > cap * 0.9 && peers.length <= cap, `${peers.length} bytes`);
  answers.set('/w/peer_list', peers);
  assert.deepEqual(
    (await daemon.peerList(true)).map((listed) => listed.publicKey),
    keys,
  );
});

test("under the portal's 192 MB heap, listings of millions of tiny values within the 32 MiB cap are refused, and the process carries on", async (t) => {
  const answers = new Map<string, Buffer>([
    ['/w/peer_list', Buffer.from(filling('peer_list', '{}', LIST_ANSWER_BYTES))],
    ['/o/connection_list', Buffer.from(filling('connection_list', '0', LIST_ANSWER_BYTES))],
  ]);
  for (const [path, body] of answers)
    assert.ok(body.length <= LIST_ANSWER_BYTES && body.length > LIST_ANSWER_BYTES - 4, path);
  const url = await startStandInNode(t, (path, response) => {
    const body = answers.get(path);
    if (body === undefined) return false;
    response.writeHead(200, { 'content-type': 'application/json' }).end(body);
    return true;
  });

  // The portal's client in a process of its own, with the heap cap the CLI's shebang sets.
  const client = fileURLToPath(new URL('../../src/node-client/daemon-client.ts', import.meta.url));
  const script = `import { HttpNodeDaemon } from ${JSON.stringify(client)};
    const daemon = new HttpNodeDaemon({ nodeNumber: 3, url: ${JSON.stringify(url)}, secret: () => null, timeoutMs: 30000 });
    for (const [what, call] of [['peer_list', () => daemon.peerList(true)], ['connection_list', () => daemon.openVpnConnectionList()]]) {
      try {
        await call();
        console.log(JSON.stringify({ what, read: true }));
      } catch (error) {
        console.log(JSON.stringify({ what, error: error.message }));
      }
    }
    await daemon.close();`;
  const child = spawn(
    process.execPath,
    ['--max-old-space-size=192', '--import', TSX, '--input-type=module', '-e', script],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  t.after(() => child.kill('SIGKILL'));
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  const lastWords = stderr
    .split('\n')
    .filter((line) => /FATAL ERROR|^\w*Error\b/.test(line))
    .slice(0, 3)
    .join('\n');
  assert.deepEqual([code, signal], [0, null], `the client's process died:\n${lastWords || stderr.slice(-500)}`);
  const outcomes = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { what: string; read?: boolean; error?: string });
  assert.deepEqual(
    outcomes.map((outcome) => outcome.what),
    ['peer_list', 'connection_list'],
  );
  for (const outcome of outcomes)
    assert.match(
      outcome.error ?? 'read',
      /answer holds more than 4194304 JSON values .*: refused without parsing it$/,
      outcome.what,
    );
});
