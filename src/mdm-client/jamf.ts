// Jamf Pro's inventory through the Jamf Pro API: a bearer token by API client credentials
// (`POST /api/oauth/token`, Jamf Pro 10.49 and later), then the computers
// (`/api/v1/computers-inventory?section=HARDWARE`) and the mobile devices (`/api/v2/mobile-devices`),
// each paged with `page` and `page-size` until `totalCount` records were read, and believed only
// when the pages agree with each other (readPages). A device's serial
// is its hardware serial number; its id (for `mdm_id`) is its UDID, unique across both kinds
// (Jamf's numeric ids are not: a computer and a phone may both be 1). The same lists give the
// UDID and serial of the devices a webhook names by their Jamf ids alone (jamfDevicesById). The
// records that hold one serial (jamfRecordsWithSerials) are read with the Jamf Pro API's RSQL
// `filter`: `hardware.serialNumber` of `/api/v1/computers-inventory`, `serialNumber` of
// `/api/v2/mobile-devices/detail` (the mobile devices' list takes no filter).
import { z } from 'zod';
import type { MdmInventorySource } from '../config/portal-config.js';
import { clientCredentialsToken, MdmInventoryError, requestJson } from './http.js';
import type { MdmInventory } from './model.js';

const PAGE_SIZE = 200;
/** More pages than this is a loop, not an inventory. */
const MAX_PAGES = 10_000;

const COMPUTERS_PAGE = z.object({
  totalCount: z.number().int().min(0),
  results: z.array(
    z.object({
      id: z.string(),
      udid: z.string().nullish(),
      hardware: z.object({ serialNumber: z.string().nullish() }).nullish(),
    }),
  ),
});

const MOBILE_DEVICES_PAGE = z.object({
  totalCount: z.number().int().min(0),
  results: z.array(z.object({ id: z.string(), udid: z.string().nullish(), serialNumber: z.string().nullish() })),
});

/** `/api/v2/mobile-devices/detail` with sections GENERAL and HARDWARE: its id is `mobileDeviceId`. */
const MOBILE_DEVICE_DETAILS_PAGE = z
  .object({
    totalCount: z.number().int().min(0),
    results: z.array(
      z.object({
        mobileDeviceId: z.string(),
        general: z.object({ udid: z.string().nullish() }).nullish(),
        hardware: z.object({ serialNumber: z.string().nullish() }).nullish(),
      }),
    ),
  })
  .transform((page) => ({
    totalCount: page.totalCount,
    results: page.results.map((record) => ({
      id: record.mobileDeviceId,
      udid: record.general?.udid,
      serialNumber: record.hardware?.serialNumber,
    })),
  }));

type JamfSource = Extract<MdmInventorySource, { provider: 'jamf' }>;

/** A device's identifiers in Jamf Pro's inventory. */
export interface JamfIdentifiers {
  readonly udid: string | null;
  readonly serial: string | null;
}

const COMPUTERS_LIST = '/api/v1/computers-inventory?section=HARDWARE&sort=id%3Aasc';
const MOBILE_DEVICES_LIST = '/api/v2/mobile-devices?sort=id%3Aasc';

async function requestHeaders(source: JamfSource): Promise<Record<string, string>> {
  const token = await clientCredentialsToken(`${source.url}/api/oauth/token`, {
    client_id: source.clientId,
    client_secret: source.clientSecret.reveal(),
  });
  return { authorization: `Bearer ${token}`, accept: 'application/json' };
}

/**
 * The UDID and serial of the computers (or mobile devices) with these Jamf ids, read from the
 * inventory's pages (Jamf's ids are per kind); an id Jamf no longer has is absent. Throws
 * MdmInventoryError when Jamf Pro cannot be read.
 */
export async function jamfDevicesById(
  source: JamfSource,
  kind: 'computer' | 'mobile',
  ids: readonly number[],
): Promise<Map<number, JamfIdentifiers>> {
  const wanted = new Set(ids.map(String));
  const found = new Map<number, JamfIdentifiers>();
  if (wanted.size === 0) return found;
  const headers = await requestHeaders(source);
  const keep = (id: string, udid: string | null | undefined, serial: string | null | undefined) => {
    if (wanted.has(id)) found.set(Number(id), { udid: nonEmpty(udid), serial: nonEmpty(serial) });
  };
  if (kind === 'computer')
    await readPages(`${source.url}${COMPUTERS_LIST}`, headers, COMPUTERS_PAGE, (record) =>
      keep(record.id, record.udid, record.hardware?.serialNumber),
    );
  else
    await readPages(`${source.url}${MOBILE_DEVICES_LIST}`, headers, MOBILE_DEVICES_PAGE, (record) =>
      keep(record.id, record.udid, record.serialNumber),
    );
  return found;
}

/**
 * For each serial, the UDIDs of the records of these kinds (computers, mobile devices) that hold
 * it, letter case aside (keyed by the serial in capitals): more than one when Jamf Pro holds
 * several records with it (a virtual machine enrolled with a laptop's serial, a replaced logic
 * board's old record, a duplicated record). A record without a UDID is given as null. One token a
 * call, one request a serial and kind. Throws MdmInventoryError when Jamf Pro cannot be read.
 */
export async function jamfRecordsWithSerials(
  source: JamfSource,
  kinds: readonly ('computer' | 'mobile')[],
  serials: readonly string[],
): Promise<Map<string, (string | null)[]>> {
  const found = new Map<string, (string | null)[]>();
  if (serials.length === 0) return found;
  const headers = await requestHeaders(source);
  for (const serial of serials) {
    const key = serial.toUpperCase();
    if (found.has(key)) continue;
    const udids: (string | null)[] = [];
    found.set(key, udids);
    // Only the records the filter is to give count: a server or proxy that dropped the filter
    // would otherwise give every record as holding the serial.
    const keep = (udid: string | null | undefined, held: string | null | undefined) => {
      if (held?.toUpperCase() === key) udids.push(nonEmpty(udid));
    };
    if (kinds.includes('computer'))
      await readPages(
        `${source.url}${COMPUTERS_LIST}&filter=${encodeURIComponent(rsqlEquals('hardware.serialNumber', serial))}`,
        headers,
        COMPUTERS_PAGE,
        (record) => keep(record.udid, record.hardware?.serialNumber),
      );
    // Few records hold one serial: one page, in the list's default order.
    if (kinds.includes('mobile'))
      await readPages(
        `${source.url}/api/v2/mobile-devices/detail?section=GENERAL&section=HARDWARE&filter=${encodeURIComponent(rsqlEquals('serialNumber', serial))}`,
        headers,
        MOBILE_DEVICE_DETAILS_PAGE,
        (record) => keep(record.udid, record.serialNumber),
      );
  }
  return found;
}

/** An RSQL equality with the value quoted (a quote or backslash in it escaped). */
function rsqlEquals(field: string, value: string): string {
  return `${field}=="${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

function nonEmpty(text: string | null | undefined): string | null {
  return text === undefined || text === null || text === '' ? null : text;
}

export async function readJamfInventory(source: JamfSource): Promise<MdmInventory> {
  const headers = await requestHeaders(source);
  const inventory: MdmInventory = { serials: new Set(), ids: new Set(), compliance: [] };
  const add = (udid: string | null | undefined, serial: string | null | undefined) => {
    if (udid !== undefined && udid !== null && udid !== '') inventory.ids.add(udid);
    if (serial !== undefined && serial !== null && serial !== '') inventory.serials.add(serial);
  };
  await readPages(`${source.url}${COMPUTERS_LIST}`, headers, COMPUTERS_PAGE, (record) =>
    add(record.udid, record.hardware?.serialNumber),
  );
  await readPages(`${source.url}${MOBILE_DEVICES_LIST}`, headers, MOBILE_DEVICES_PAGE, (record) =>
    add(record.udid, record.serialNumber),
  );
  return inventory;
}

/**
 * Every page of a Jamf Pro API list, read by offset (`page`, `page-size`). Offsets shift when Jamf
 * Pro gains or loses a record between two pages, so one record could go unseen while the (new)
 * `totalCount` is still met; an unseen device would be retired. The list is therefore believed
 * only when it is consistent: the same `totalCount` on every page, every page before the last
 * as long as the first, no record twice, and as many records as `totalCount`. Anything else
 * throws MdmInventoryError (the pass retires nothing and the next one reads again).
 */
async function readPages<R extends { id: string }>(
  base: string,
  headers: Record<string, string>,
  schema: z.ZodType<{ totalCount: number; results: R[] }>,
  each: (record: R) => void,
): Promise<void> {
  const seen = new Set<string>();
  let total: number | undefined;
  let size: number | undefined;
  const where = base.slice(0, base.indexOf('?'));
  for (let page = 0; ; page++) {
    if (page >= MAX_PAGES) throw new MdmInventoryError(`Jamf Pro gave more than ${MAX_PAGES} pages`);
    const answer = await requestJson(`${base}&page=${page}&page-size=${PAGE_SIZE}`, { headers }, schema);
    total ??= answer.totalCount;
    if (answer.totalCount !== total)
      throw new MdmInventoryError(
        `${where}: totalCount changed from ${total} to ${answer.totalCount} while the pages were read`,
      );
    if (answer.results.length === 0 && seen.size < total)
      throw new MdmInventoryError(`${where}: page ${page} is empty after ${seen.size} of ${total} records`);
    // The server's page size (at most the one asked for) is the first page's length.
    size ??= answer.results.length;
    if (answer.results.length > size)
      throw new MdmInventoryError(`${where}: page ${page} holds ${answer.results.length} records, more than page 0`);
    for (const record of answer.results) {
      if (seen.has(record.id))
        throw new MdmInventoryError(`${where}: record ${record.id} appears twice (page ${page})`);
      seen.add(record.id);
      each(record);
    }
    if (seen.size > total) throw new MdmInventoryError(`${where}: more records than its totalCount of ${total}`);
    if (seen.size === total) return;
    if (answer.results.length < size)
      throw new MdmInventoryError(
        `${where}: page ${page} is short (${answer.results.length} records) after ${seen.size} of ${total}`,
      );
  }
}
