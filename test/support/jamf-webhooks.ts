// Jamf Pro's webhook deliveries as Jamf sends them (its documented JSON payloads: `webhook`
// with `webhookEvent`, and the `event`), the secret files of `mdmPush.jamf` (0600 in a 0700
// folder), and a sender that posts a delivery to a portal's `{baseUrl}mdm/jamf`.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import type { PortalConfigFile } from '../../src/config/schema.js';
import { startTestPortal, type TestPortal } from './test-portal.js';

export const JAMF_USER = 'jamf-webhook';
export const JAMF_PASSWORD = 'correct horse battery staple';
export const JAMF_HEADER = 'X-Jamf-Secret';
export const JAMF_HEADER_VALUE = 'a-long-random-header-value';
/** The allowed smart group of the tests, a computer group: id 12, "VPN allowed". */
export const ALLOWED_GROUP = { id: 12, name: 'VPN allowed' } as const;

type JamfPushOption = NonNullable<NonNullable<PortalConfigFile['mdmPush']>['jamf']>;

/** A 0700 folder for the secret files; the test removes it. */
export function secretsFolder(): string {
  return mkdtempSync(path.join(tmpdir(), 'jamf-secrets-'));
}

/** `mdmPush.jamf` with both kinds of authentication, the secrets in files (0600) of `folder`. */
export function jamfPushOption(
  folder: string,
  allowedGroups: JamfPushOption['allowedGroups'] = [{ kind: 'computer', id: ALLOWED_GROUP.id }],
): JamfPushOption {
  const passwordFile = path.join(folder, 'password');
  const valueFile = path.join(folder, 'header');
  writeFileSync(passwordFile, `${JAMF_PASSWORD}\n`, { mode: 0o600 });
  writeFileSync(valueFile, JAMF_HEADER_VALUE, { mode: 0o600 });
  return {
    allowedGroups,
    basicAuth: { username: JAMF_USER, passwordFile },
    headerAuth: { name: JAMF_HEADER, valueFile },
  };
}

export const BASIC_AUTH = {
  authorization: `Basic ${Buffer.from(`${JAMF_USER}:${JAMF_PASSWORD}`).toString('base64')}`,
};

/** A device as a mobile device group's webhook lists it. */
export interface JamfDeviceFields {
  readonly jssID: number;
  readonly udid?: string;
  readonly serialNumber?: string;
}

let webhookTime = 1_764_400_000_000;

function webhook(event: string): Record<string, unknown> {
  webhookTime += 1000;
  return { eventTimestamp: webhookTime, id: 7, name: 'VPN portal', webhookEvent: event };
}

/** A smart group membership change, computers (ids only, as Jamf's sample) or mobile devices (with their fields). */
export function groupChange(
  kind: 'computer' | 'mobile',
  group: { readonly id: number; readonly name: string },
  change: { readonly added?: readonly JamfDeviceFields[]; readonly removed?: readonly JamfDeviceFields[] },
): unknown {
  const added = change.added ?? [];
  const removed = change.removed ?? [];
  const entry = (device: JamfDeviceFields) => ({
    deviceName: `device ${device.jssID}`,
    jssID: device.jssID,
    model: kind === 'computer' ? 'MacBookPro18,3' : 'iPhone15,2',
    serialNumber: device.serialNumber ?? '',
    udid: device.udid ?? '',
  });
  return {
    event: {
      computer: kind === 'computer',
      groupAddedDevices: added.map(entry),
      groupAddedDevicesIds: added.map((device) => device.jssID),
      groupRemovedDevices: removed.map(entry),
      groupRemovedDevicesIds: removed.map((device) => device.jssID),
      jssid: group.id,
      name: group.name,
      smartGroup: true,
    },
    webhook: webhook(
      kind === 'computer' ? 'SmartGroupComputerMembershipChange' : 'SmartGroupMobileDeviceMembershipChange',
    ),
  };
}

/** A smart group membership change naming the devices by their Jamf ids alone, as Jamf's computer sample does. */
export function groupChangeByIds(
  kind: 'computer' | 'mobile',
  group: { readonly id: number; readonly name: string },
  change: { readonly added?: readonly number[]; readonly removed?: readonly number[] },
): unknown {
  return {
    event: {
      computer: kind === 'computer',
      groupAddedDevices: [],
      groupAddedDevicesIds: change.added ?? [],
      groupRemovedDevices: [],
      groupRemovedDevicesIds: change.removed ?? [],
      jssid: group.id,
      name: group.name,
      smartGroup: true,
    },
    webhook: webhook(
      kind === 'computer' ? 'SmartGroupComputerMembershipChange' : 'SmartGroupMobileDeviceMembershipChange',
    ),
  };
}

/** `ComputerInventoryCompleted` for a computer. */
export function inventoryCompleted(device: JamfDeviceFields): unknown {
  return {
    event: {
      deviceName: `device ${device.jssID}`,
      jssID: device.jssID,
      model: 'MacBookPro18,3',
      osVersion: '15.1',
      serialNumber: device.serialNumber ?? '',
      udid: device.udid ?? '',
      username: 'alice',
    },
    webhook: webhook('ComputerInventoryCompleted'),
  };
}

export interface JamfAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** Posts a delivery to `{portalUrl}{basePath}/mdm/jamf` with these headers (default: the Basic credentials). */
export async function deliver(
  receiverUrl: string,
  body: unknown,
  headers: Record<string, string> = BASIC_AUTH,
): Promise<JamfAnswer> {
  const response = await fetch(receiverUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** A portal that takes Jamf Pro's webhooks (`mdmPush.jamf`), stopped and its secrets removed after `t`. */
export interface JamfReceiverPortal {
  readonly portal: TestPortal;
  /** Where Jamf Pro delivers: `{baseUrl}mdm/jamf`. */
  readonly receiver: string;
  /** Registers one of alice's macOS devices in `employees`, by these identifiers. */
  register(identifiers: { serial?: string; mdm_id?: string }): Promise<{ readonly device_id: string }>;
  /** A registered device's state now. */
  state(device: { readonly device_id: string }): Promise<string>;
}

export async function startJamfReceiverPortal(t: TestContext): Promise<JamfReceiverPortal> {
  const folder = secretsFolder();
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  const portal = await startTestPortal({ config: { mdmPush: { jamf: jamfPushOption(folder) } } });
  t.after(() => portal.close());
  return {
    portal,
    receiver: `${portal.portal.url}/vpn-user-portal/mdm/jamf`,
    register: (identifiers) =>
      portal.admin.registerDevice({ user_id: 'alice', profile_id: 'employees', platform: 'macos', ...identifiers }),
    state: async (device) => (await portal.admin.device(device.device_id)).state,
  };
}
