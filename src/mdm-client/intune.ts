// Microsoft Intune's inventory through Microsoft Graph, as eduVPN's Intune provisioning research
// reads it: an app token by OAuth 2.0 client credentials (scope `<graph>/.default`), then
// `deviceManagement/managedDevices?$select=id,serialNumber`, following `@odata.nextLink` page by
// page. A next link is followed only on Graph's own origin, so the token never goes elsewhere,
// and only once: one already followed is a loop, and the inventory is unreadable. A device listed
// on two pages is counted once; more than MAX_DEVICES records is unreadable too.
// With compliance asked for, the same pages also select `complianceState`,
// `complianceGracePeriodExpirationDateTime` and `lastSyncDateTime` (the same permission).
import { z } from 'zod';
import type { MdmInventorySource } from '../config/portal-config.js';
import { clientCredentialsToken, MdmInventoryError, requestJson } from './http.js';
import type { MdmComplianceState, MdmInventory, MdmReadOptions } from './model.js';

/** More pages than this is a loop, not an inventory (Graph pages hold up to 1,000 devices). */
const MAX_PAGES = 10_000;
/**
 * More device records than this (duplicates included) is a loop or a runaway answer, not a
 * fleet: far above any tenant's managed devices, and it bounds what one pass reads and holds.
 */
const MAX_DEVICES = 1_000_000;

/** Graph's DateTimeOffset (ISO 8601, up to seven fractional digits). */
const GRAPH_DATE_TIME = z
  .string()
  .refine(
    (text) => /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(text) && !Number.isNaN(graphTime(text)),
    'a date and time (ISO 8601)',
  );

/** The zone at the end of an ISO 8601 date and time: `Z` or an offset. */
const ZONE = /(?:Z|[+-]\d\d(?::?\d\d)?)$/i;

/**
 * A Graph date and time in milliseconds since 1970. Graph writes every DateTimeOffset in UTC with
 * its `Z`; one without a zone (a proxy or an export that dropped it) is read as UTC too, as Graph
 * means it: JavaScript would read it in the portal's local time, moving a check-in or the end of a
 * grace period by the portal's offset from UTC.
 */
function graphTime(text: string): number {
  return Date.parse(ZONE.test(text) ? text : `${text}Z`);
}

const MANAGED_DEVICES_PAGE = z.object({
  value: z.array(
    z.object({
      id: z.string().min(1),
      serialNumber: z.string().nullish(),
      complianceState: z.string().nullish(),
      complianceGracePeriodExpirationDateTime: GRAPH_DATE_TIME.nullish(),
      lastSyncDateTime: GRAPH_DATE_TIME.nullish(),
    }),
  ),
  '@odata.nextLink': z.string().optional(),
});

type ManagedDevice = z.infer<typeof MANAGED_DEVICES_PAGE>['value'][number];

const BASIC_SELECT = 'id,serialNumber';
const COMPLIANCE_SELECT = `${BASIC_SELECT},complianceState,complianceGracePeriodExpirationDateTime,lastSyncDateTime`;

export async function readIntuneInventory(
  source: Extract<MdmInventorySource, { provider: 'intune' }>,
  options: MdmReadOptions,
): Promise<MdmInventory> {
  const graph = new URL(`${source.graphUrl}/`);
  const token = await clientCredentialsToken(source.tokenUrl, {
    client_id: source.clientId,
    client_secret: source.clientSecret.reveal(),
    scope: `${graph.origin}/.default`,
  });
  const headers = { authorization: `Bearer ${token}`, accept: 'application/json', ConsistencyLevel: 'eventual' };
  const inventory = {
    serials: new Set<string>(),
    ids: new Set<string>(),
    compliance: [] as MdmInventory['compliance'][number][],
  };
  const select = options.compliance ? COMPLIANCE_SELECT : BASIC_SELECT;
  let next: string | undefined = new URL(`deviceManagement/managedDevices?$select=${select}`, graph).href;
  // A next link already followed is a loop: the pages would repeat until MAX_PAGES.
  const followed = new Set<string>();
  let read = 0;
  for (let pages = 0; next !== undefined; pages++) {
    if (pages >= MAX_PAGES) throw new MdmInventoryError(`Graph gave more than ${MAX_PAGES} pages`);
    const url = new URL(next);
    if (url.origin !== graph.origin)
      throw new MdmInventoryError(`Graph's @odata.nextLink leads to another origin (${url.origin})`);
    if (followed.has(url.href))
      throw new MdmInventoryError(`Graph's @odata.nextLink leads back to a page already read (page ${pages + 1})`);
    followed.add(url.href);
    const page: z.infer<typeof MANAGED_DEVICES_PAGE> = await requestJson(url.href, { headers }, MANAGED_DEVICES_PAGE);
    read += page.value.length;
    if (read > MAX_DEVICES) throw new MdmInventoryError(`Graph gave more than ${MAX_DEVICES} devices`);
    for (const device of page.value) {
      // A device listed again (on a later page) is the same device: counted once.
      if (inventory.ids.has(device.id)) continue;
      inventory.ids.add(device.id);
      const serial = device.serialNumber === undefined || device.serialNumber === '' ? null : device.serialNumber;
      if (serial !== null) inventory.serials.add(serial);
      if (options.compliance)
        inventory.compliance.push({
          serial,
          id: device.id,
          state: complianceStateOf(device),
          lastCheckIn: meaningfulDate(device.lastSyncDateTime),
        });
    }
    next = page['@odata.nextLink'];
  }
  return inventory;
}

/** Intune's `complianceState` as a verdict; a value Graph may add later is `undetermined`. */
function complianceStateOf(device: ManagedDevice): MdmComplianceState {
  switch (device.complianceState) {
    case 'compliant':
      return { kind: 'compliant' };
    case 'noncompliant':
      return { kind: 'noncompliant' };
    case 'inGracePeriod':
      return { kind: 'in-grace-period', until: meaningfulDate(device.complianceGracePeriodExpirationDateTime) };
    default:
      return { kind: 'undetermined', reported: device.complianceState ?? '(none)' };
  }
}

/** Graph writes `0001-01-01T00:00:00Z` for a date it does not have: that (and anything before 1970) is none. */
function meaningfulDate(text: string | null | undefined): Date | null {
  if (text === undefined || text === null) return null;
  const at = graphTime(text);
  return at > 0 ? new Date(at) : null;
}
