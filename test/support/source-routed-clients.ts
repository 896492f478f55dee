// Several full-tunnel WireGuard clients in the lab's one client namespace: each configuration is
// brought up with `Table = off` and only the traffic of its own tunnel address is routed into it
// (a rule by source address and a table of its own), so that each client's requests leave the
// node as that client's. The deterministic NAT and attribution tests use it.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LAB_PROFILE, type TunnelLab } from './tunnel-lab.js';

export interface SourceRoutedClient {
  readonly userId: string;
  /** The configuration's IPv4 tunnel address. */
  readonly address: string;
  readonly publicKey: string;
  readonly file: string;
  readonly table: number;
}

const WG_QUICK_ENV = { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' };

/** POST /create for `userId`, brought up in the client namespace with routing table `table`. */
export async function connectSourceRoutedClient(
  lab: TunnelLab,
  userId: string,
  table: number,
): Promise<SourceRoutedClient> {
  const created = await lab.portal.post(
    '/create',
    { user_id: userId, profile_id: LAB_PROFILE },
    { accept: 'application/x-wireguard-profile' },
  );
  assert.equal(created.status, 200, created.text);
  const address = /^Address = (\d+\.\d+\.\d+\.\d+)\//m.exec(created.text)?.[1];
  assert.ok(address !== undefined, created.text);
  const interfaceName = lab.lab.interfaceName('wgc');
  const file = join(lab.directory, `${interfaceName}.conf`);
  const body = created.text.replace(/^DNS = .*\n/m, '').replace(/^\[Interface\]$/m, '[Interface]\nTable = off');
  await writeFile(file, body, { mode: 0o600 });
  await lab.client.exec('wg-quick', ['up', file], { env: WG_QUICK_ENV });
  await lab.client.exec('ip', ['rule', 'add', 'from', address, 'lookup', String(table)]);
  await lab.client.exec('ip', ['route', 'add', 'default', 'dev', interfaceName, 'table', String(table)]);
  const publicKey = (await lab.client.exec('wg', ['show', interfaceName, 'public-key'])).stdout.trim();
  return { userId, address, publicKey, file, table };
}

/** Takes the client's tunnel down, with the rule that routed its address into it. */
export async function disconnectSourceRoutedClient(lab: TunnelLab, client: SourceRoutedClient): Promise<void> {
  await lab.client.exec('ip', ['rule', 'del', 'from', client.address, 'lookup', String(client.table)]);
  await lab.client.exec('wg-quick', ['down', client.file], { env: WG_QUICK_ENV });
}
