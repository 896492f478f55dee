// The device calls (extensions, for managed devices): POST /register_device, GET /devices, GET /device,
// POST /retire_device (src/core/devices/devices.ts), POST /suspend_device and /resume_device
// (src/core/devices/suspension.ts), and the parameters by which `create` and `enrollment_token`
// name the device a configuration is for.
import {
  changedBy,
  deviceWireFields,
  getDeviceWithHistory,
  listDevices,
  registerDevice,
  resumeDevice,
  retireDevice,
  suspendDevice,
  type DeviceHistoryEntry,
  type DeviceRecord,
  type DeviceReference,
} from '../../../../core/devices/index.js';
import {
  ADMIN_API_CALLS,
  REVOCATION_HEADER,
  type DeviceHistoryEntryInfo,
  type DeviceInfo,
} from '../../../../protocol/admin-api.js';
import type { Platform } from '../../../../shared/platforms.js';
import type { DeviceId } from '../../../../shared/ids.js';
import { defineRoute } from '../../admin-route.js';
import { HttpError } from '../../../plumbing/http-error.js';

/** The device the parameters name, if any; 400 when they name it more than one way. */
export function deviceReferenceOf(params: {
  readonly device_id?: DeviceId | undefined;
  readonly serial?: string | undefined;
  readonly mdm_id?: string | undefined;
}): DeviceReference | undefined {
  const given = [params.device_id, params.serial, params.mdm_id].filter((value) => value !== undefined).length;
  if (given > 1) throw new HttpError(400, 'name the device by one of "device_id", "serial" or "mdm_id", not several');
  if (params.device_id !== undefined) return { deviceId: params.device_id };
  if (params.serial !== undefined) return { serial: params.serial };
  if (params.mdm_id !== undefined) return { mdmId: params.mdm_id };
  return undefined;
}

/** The request fields of create and enrollment_token for the device the parameters name. */
export function deviceRequest(params: {
  readonly device_id?: DeviceId | undefined;
  readonly serial?: string | undefined;
  readonly mdm_id?: string | undefined;
  readonly platform?: Platform | undefined;
}): { readonly device?: DeviceReference; readonly platform?: Platform } {
  const device = deviceReferenceOf(params);
  return {
    ...(device === undefined ? {} : { device }),
    ...(params.platform === undefined ? {} : { platform: params.platform }),
  };
}

export const registerDeviceRoute = defineRoute({
  ...ADMIN_API_CALLS.registerDevice,
  summary: 'Register a managed device of a user (the user is made when missing), by its serial number or MDM id',
  since: 'extension',
  source: 'post',
  answerDoc: 'The device (the one already registered, when the same registration is sent again)',
  async handle(ctx, params) {
    const device = await registerDevice(ctx, {
      userId: params.user_id,
      profileId: params.profile_id,
      platform: params.platform,
      serial: params.serial,
      mdmId: params.mdm_id,
    });
    return { status: 200, json: { device: deviceJson({ device, configurations: [] }) } };
  },
});

export const devicesRoute = defineRoute({
  ...ADMIN_API_CALLS.devices,
  summary: 'The registered devices, newest first, a page at a time, limited to the key’s profiles',
  since: 'extension',
  source: 'query',
  answerDoc: 'One page of devices, newest first',
  async handle(ctx, params) {
    const page = await listDevices(ctx, {
      ...(params.user_id === undefined ? {} : { userId: params.user_id }),
      ...(params.profile_id === undefined ? {} : { profileId: params.profile_id }),
      ...(params.platform === undefined ? {} : { platform: params.platform }),
      ...(params.state === undefined ? {} : { state: params.state }),
      ...(params.identity === undefined ? {} : { identity: params.identity }),
      ...(params.serial === undefined ? {} : { serial: params.serial }),
      ...(params.mdm_id === undefined ? {} : { mdmId: params.mdm_id }),
      ...(params.last_seen_before === undefined ? {} : { lastSeenBefore: params.last_seen_before }),
      ...(params.cursor === undefined ? {} : { before: params.cursor }),
      ...(params.limit === undefined ? {} : { limit: params.limit }),
    });
    return { status: 200, json: { devices: page.devices.map(deviceJson), next_cursor: page.nextCursor } };
  },
});

export const deviceRoute = defineRoute({
  ...ADMIN_API_CALLS.device,
  summary: 'One registered device with its configurations and the history of its state',
  since: 'extension',
  source: 'query',
  answerDoc: "The device, and every change of its state, oldest first, with the change's reason and author",
  async handle(ctx, params) {
    const { history, ...record } = await getDeviceWithHistory(ctx, params.device_id);
    return { status: 200, json: { device: deviceJson(record), history: history.map(historyJson) } };
  },
});

export const retireDeviceRoute = defineRoute({
  ...ADMIN_API_CALLS.retireDevice,
  summary:
    'Retire a device for good: every configuration of it leaves the database and the nodes, its enrollment tokens are revoked',
  since: 'extension',
  source: 'post',
  answerDoc:
    'The device, retired (a device retired already is answered as it is); when configurations were revoked, the `VPN-Portal-Revocation` header names the receipt',
  async handle(ctx, params) {
    const { device, revocationId } = await retireDevice(ctx, params.device_id);
    const json = { device: deviceJson(device) };
    return revocationId === null
      ? { status: 200, json }
      : { status: 200, json, headers: { [REVOCATION_HEADER]: revocationId } };
  },
});

export const suspendDeviceRoute = defineRoute({
  ...ADMIN_API_CALLS.suspendDevice,
  summary:
    'Suspend a device: its configurations are kept but leave every node (peers removed, OpenVPN clients disconnected and refused) until it is resumed',
  since: 'extension',
  source: 'post',
  answerDoc:
    "The device, suspended (a device suspended already is answered as it is, unchanged); when it has configurations, the `VPN-Portal-Revocation` header names the receipt of their leaving the nodes (the suspension's own when it was suspended already)",
  async handle(ctx, params) {
    const { device, revocationId } = await suspendDevice(ctx, {
      deviceId: params.device_id,
      ...(params.reason === undefined ? {} : { reason: params.reason }),
      by: changedBy(ctx) ?? '(unknown)',
      byHand: true,
    });
    const json = { device: deviceJson(device) };
    return revocationId === null
      ? { status: 200, json }
      : { status: 200, json, headers: { [REVOCATION_HEADER]: revocationId } };
  },
});

export const resumeDeviceRoute = defineRoute({
  ...ADMIN_API_CALLS.resumeDevice,
  summary:
    "Resume a suspended device: every reason it is suspended for ends (also those of the MDM's checks and Jamf Pro), and its unexpired configurations go back on their nodes (not while its user is disabled)",
  since: 'extension',
  source: 'post',
  answerDoc: 'The device, resumed (a device not suspended is answered as it is, unchanged)',
  async handle(ctx, params) {
    const { device } = await resumeDevice(ctx, { deviceId: params.device_id, by: changedBy(ctx) ?? '(unknown)' });
    return { status: 200, json: { device: deviceJson(device) } };
  },
});

function deviceJson({ device, configurations }: DeviceRecord): DeviceInfo {
  return {
    ...deviceWireFields(device),
    identity: device.identity,
    certificate:
      device.certificate === null
        ? null
        : {
            subject: device.certificate.subject,
            issuer: device.certificate.issuer,
            serial_number: device.certificate.serialNumber,
            not_after: device.certificate.notAfter,
          },
    state: device.state,
    suspension:
      device.suspension === null
        ? null
        : {
            reason: device.suspension.reason,
            since: device.suspension.since,
            by: device.suspension.by,
            other_reasons: device.suspension.others.map(({ reason, since, by }) => ({ reason, since, by })),
          },
    created_at: device.createdAt,
    retired_at: device.retiredAt,
    last_seen_at: device.lastSeenAt,
    configurations: configurations.map((configuration) => ({
      connection_id: configuration.connectionId,
      profile_id: configuration.profileId,
      vpn_proto: configuration.vpnProto,
      expires_at: configuration.expiresAt,
    })),
  };
}

function historyJson(entry: DeviceHistoryEntry): DeviceHistoryEntryInfo {
  return {
    at: entry.at,
    change: entry.change,
    state_before: entry.stateBefore,
    state_after: entry.stateAfter,
    reason: entry.reason,
    by: entry.by,
    revocation_id: entry.revocationId,
  };
}
