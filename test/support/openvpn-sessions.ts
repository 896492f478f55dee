// OpenVPN sessions as a node reports them through the Node API (`/connect`), without a node:
// for tests of the connection history and what reads it.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { PortalConfigFile } from '../../src/config/schema.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { startTestPortal, UNREACHABLE_NODE, type ApiResponse, type TestPortal } from './test-portal.js';

/** One OpenVPN profile, `employees` (10.60.0.0/24, fd60::/64), on a node nobody answers at. */
export const openVpnEmployees: Partial<PortalConfigFile> = {
  ProfileList: [
    {
      profileId: 'employees',
      displayName: 'Employees',
      hostName: 'vpn.example.org',
      oRangeFour: '10.60.0.0/24',
      oRangeSix: 'fd60::/64',
      nodeUrl: UNREACHABLE_NODE,
    },
  ],
};

/**
 * A portal with `employees` accounting to a RADIUS server that never answers, so every record
 * stays queued in `radius_outbox` in the order it was queued, on a clock the test moves with
 * `later`.
 */
export async function queuedAccountingPortal(t: TestContext) {
  const folder = await mkdtemp(join(tmpdir(), 'queued-accounting-'));
  t.after(() => rm(folder, { recursive: true, force: true }));
  const secretFile = join(folder, 'radius.secret');
  await writeFile(secretFile, 'testing123\n', { mode: 0o600 });
  const clock = { now: new Date('2026-03-01T10:00:00Z') };
  const portal = await startTestPortal({
    config: { ...openVpnEmployees, accounting: { radius: { servers: [{ address: '127.0.0.1:9', secretFile }] } } },
    clock: { now: () => clock.now },
  });
  t.after(() => portal.close());
  const later = (ms: number) => {
    clock.now = new Date(clock.now.getTime() + ms);
  };
  return { portal, clock, later };
}

/** Makes an OpenVPN configuration for the user in `employees`; returns its connection id (Common Name). */
export async function openVpnConfiguration(portal: TestPortal, userId: string): Promise<string> {
  await portal.admin.create({ user_id: userId, profile_id: 'employees' }, 'application/x-openvpn-profile');
  const [configuration] = await portal.admin.userConfigurationList(userId);
  return configuration?.connection_id ?? '';
}

/** Node 0 reports that the configuration connected, with these addresses; the portal allows it. */
export async function reportOpenVpnConnect(
  portal: TestPortal,
  connectionId: string,
  addresses: { readonly originating_ip: string; readonly ip_four: string; readonly ip_six?: string },
): Promise<void> {
  const connect = await portal.request(`${portal.nodeApiUrl}/connect`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${portal.portal.ctx.keys.nodeSecret(asNodeNumber(0)) ?? ''}`,
      'x-node-number': '0',
    },
    body: new URLSearchParams({ profile_id: 'employees', common_name: connectionId, ...addresses }),
  });
  assert.equal(connect.text, 'OK');
}

/**
 * Node 0 posts a disconnect report of the configuration: `form` over the defaults (profile
 * `employees`, 10 bytes in, 20 out). The answer, whatever it is.
 */
export function postOpenVpnDisconnect(
  portal: TestPortal,
  connectionId: string,
  form: Readonly<Record<string, string>>,
): Promise<ApiResponse> {
  return portal.request(`${portal.nodeApiUrl}/disconnect`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${portal.portal.ctx.keys.nodeSecret(asNodeNumber(0)) ?? ''}`,
      'x-node-number': '0',
    },
    body: new URLSearchParams({
      profile_id: 'employees',
      common_name: connectionId,
      bytes_in: '10',
      bytes_out: '20',
      ...form,
    }),
  });
}

/** Node 0 reports that the configuration disconnected; the portal takes the report. */
export async function reportOpenVpnDisconnect(
  portal: TestPortal,
  connectionId: string,
  addresses: { readonly ip_four: string; readonly ip_six?: string; readonly age_ms?: string },
): Promise<void> {
  const disconnect = await postOpenVpnDisconnect(portal, connectionId, addresses);
  assert.equal(disconnect.status, 200, disconnect.text);
}
