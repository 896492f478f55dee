// Jamf Pro's webhooks as the portal reads them (Jamf's documented JSON payloads: a `webhook`
// object naming the event in `webhookEvent` and the time Jamf Pro made it in `eventTimestamp`,
// and the `event` itself): smart group membership
// changes of computers and mobile devices (`jssid` and `name` of the group, the Jamf ids of the
// devices that joined and left it in `groupAddedDevicesIds` / `groupRemovedDevicesIds`, and,
// where Jamf includes them, the devices themselves in `groupAddedDevices` / `groupRemovedDevices`
// with their `udid` and `serialNumber`), and `ComputerInventoryCompleted` (the computer's fields
// at the top of `event`). Any other event is named and left alone. Pure: src/http/mdm-push/
// receives it, src/core/devices/jamf-push.ts acts on it.
import { z } from 'zod';
import { param } from './admin-api-params.js';
import { unstorable } from '../shared/storable-text.js';

export const JAMF_GROUP_EVENTS = [
  'SmartGroupComputerMembershipChange',
  'SmartGroupMobileDeviceMembershipChange',
] as const;
export const JAMF_INVENTORY_EVENTS = ['ComputerInventoryCompleted'] as const;

/** A device as an event names it: Jamf's own id (numbered per kind), its UDID and its serial, each when given. */
export interface JamfDevice {
  readonly jamfId: number | null;
  readonly udid: string | null;
  readonly serial: string | null;
}

export type JamfEvent =
  | {
      readonly kind: 'group-change';
      readonly webhookEvent: (typeof JAMF_GROUP_EVENTS)[number];
      readonly devices: 'computer' | 'mobile';
      readonly groupId: number;
      readonly groupName: string;
      readonly added: readonly JamfDevice[];
      readonly removed: readonly JamfDevice[];
      /** When Jamf Pro made the event (`webhook.eventTimestamp`); null when it does not say. */
      readonly at: Date | null;
    }
  | {
      readonly kind: 'inventory';
      readonly webhookEvent: (typeof JAMF_INVENTORY_EVENTS)[number];
      readonly device: JamfDevice;
    }
  | { readonly kind: 'other'; readonly webhookEvent: string };

/** A body that is not a Jamf Pro webhook, or an event the portal acts on that lacks what it needs. */
export class JamfWebhookError extends Error {
  override readonly name = 'JamfWebhookError';
}

const ENVELOPE = z.object({
  webhook: z.object({
    webhookEvent: z.string().min(1).max(200),
    // Milliseconds since 1970, by Jamf Pro's clock; at most what a Date holds.
    eventTimestamp: z.int().min(0).max(8_640_000_000_000_000).nullish(),
  }),
  event: z.unknown().refine((event) => event !== undefined),
});

const jamfIds = z.array(z.int().min(0)).nullish();
const deviceEntries = z.array(z.record(z.string(), z.unknown()).nullable()).nullish();

const GROUP_CHANGE = z.object({
  jssid: z.int().min(0),
  name: z.string(),
  groupAddedDevicesIds: jamfIds,
  groupRemovedDevicesIds: jamfIds,
  groupAddedDevices: deviceEntries,
  groupRemovedDevices: deviceEntries,
});

const INVENTORY = z.record(z.string(), z.unknown());

/** Reads a webhook's JSON body; throws JamfWebhookError with what is wrong. */
export function parseJamfWebhook(body: unknown): JamfEvent {
  const envelope = ENVELOPE.safeParse(body);
  if (!envelope.success) {
    if (envelope.error.issues.some((issue) => issue.path.join('.') === 'webhook.eventTimestamp'))
      throw new JamfWebhookError('"webhook.eventTimestamp" must be a whole number of milliseconds since 1970');
    throw new JamfWebhookError('not a Jamf Pro webhook: the body needs "webhook.webhookEvent" and "event"');
  }
  const { webhookEvent, eventTimestamp } = envelope.data.webhook;
  // Only what is stored or looked up as sent is held to what a database stores (PostgreSQL
  // refuses a NUL even as a query's parameter): a device's UDID and serial pass textOf, which
  // takes none; a device's name or any other field the portal does not read cannot refuse the
  // delivery, and with it the devices that left the group.
  refuseUnstorable('"webhook.webhookEvent"', webhookEvent);
  const event = envelope.data.event;
  if (isOneOf(JAMF_GROUP_EVENTS, webhookEvent)) {
    const change = GROUP_CHANGE.safeParse(event);
    if (!change.success) throw new JamfWebhookError(`${webhookEvent}: ${describe(change.error)}`);
    refuseUnstorable(`${webhookEvent}: "name"`, change.data.name);
    return {
      kind: 'group-change',
      webhookEvent,
      devices: webhookEvent === 'SmartGroupComputerMembershipChange' ? 'computer' : 'mobile',
      groupId: change.data.jssid,
      groupName: change.data.name,
      added: devicesOf(change.data.groupAddedDevicesIds ?? [], change.data.groupAddedDevices ?? []),
      removed: devicesOf(change.data.groupRemovedDevicesIds ?? [], change.data.groupRemovedDevices ?? []),
      at: eventTimestamp === undefined || eventTimestamp === null ? null : new Date(eventTimestamp),
    };
  }
  if (isOneOf(JAMF_INVENTORY_EVENTS, webhookEvent)) {
    const fields = INVENTORY.safeParse(event);
    if (!fields.success) throw new JamfWebhookError(`${webhookEvent}: "event" must be an object`);
    // Jamf sends the computer's fields in `event`; some versions nest them in `event.computer`.
    const nested = INVENTORY.safeParse(fields.data['computer']);
    const device = deviceOf(nested.success ? nested.data : fields.data);
    if (device.udid === null && device.serial === null)
      throw new JamfWebhookError(`${webhookEvent}: the event names neither "udid" nor "serialNumber"`);
    return { kind: 'inventory', webhookEvent, device };
  }
  return { kind: 'other', webhookEvent };
}

function refuseUnstorable(field: string, text: string): void {
  const problem = unstorable(text);
  if (problem !== null) throw new JamfWebhookError(`${field} holds ${problem}`);
}

function isOneOf<T extends string>(list: readonly T[], value: string): value is T {
  return (list as readonly string[]).includes(value);
}

/** The ids listed, each with its entry's UDID and serial where Jamf gave the entry; entries without an id too. */
function devicesOf(ids: readonly number[], entries: readonly (Record<string, unknown> | null)[]): JamfDevice[] {
  const byId = new Map<number, JamfDevice>();
  const withoutId: JamfDevice[] = [];
  for (const entry of entries) {
    if (entry === null) continue;
    const device = deviceOf(entry);
    if (device.jamfId !== null) byId.set(device.jamfId, device);
    else if (device.udid !== null || device.serial !== null) withoutId.push(device);
  }
  for (const id of ids) if (!byId.has(id)) byId.set(id, { jamfId: id, udid: null, serial: null });
  return [...byId.values(), ...withoutId];
}

/**
 * A device's identifiers from Jamf's fields, however the payload spells them: `udid`, `UDID`;
 * `serialNumber`, `Serial Number` (a display field of a mobile device group's webhook),
 * `serial_number`; `jssID`, `jssid`, `id`.
 */
function deviceOf(fields: Record<string, unknown>): JamfDevice {
  let jamfId: number | null = null;
  let udid: string | null = null;
  let serial: string | null = null;
  for (const [key, value] of Object.entries(fields)) {
    const name = key.toLowerCase().replace(/[^a-z]/g, '');
    if (name === 'udid') udid = textOf(value) ?? udid;
    else if (name === 'serialnumber') serial = textOf(value) ?? serial;
    else if (name === 'jssid' || name === 'id') jamfId = idOf(value) ?? jamfId;
  }
  return { jamfId, udid, serial };
}

/**
 * A UDID or serial as the Admin API's serial and mdm_id take it, else none: one no device can be
 * registered with names no device, and is never written to one by an inventory event.
 */
function textOf(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const text = value.trim();
  return param.deviceIdentifier.safeParse(text).success ? text : null;
}

function idOf(value: unknown): number | null {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  if (typeof value === 'string' && /^\d{1,15}$/.test(value)) return Number(value);
  return null;
}

function describe(error: z.ZodError): string {
  return error.issues.map((issue) => `"${issue.path.join('.') || 'event'}": ${issue.message}`).join('; ');
}
