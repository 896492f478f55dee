// Microsoft Intune's inventory through Microsoft Graph, as eduVPN's Intune provisioning research
// reads it: an app token by OAuth 2.0 client credentials (scope `<graph>/.default`), then
// `deviceManagement/managedDevices?$select=id,serialNumber`, following `@odata.nextLink` page by
// page. A next link is followed only on Graph's own origin, so the token never goes elsewhere.
import { z } from 'zod';
import type { MdmInventorySource } from '../config/portal-config.js';
import { clientCredentialsToken, MdmInventoryError, requestJson } from './http.js';
import type { MdmInventory } from './model.js';

/** More pages than this is a loop, not an inventory (Graph pages hold up to 1,000 devices). */
const MAX_PAGES = 10_000;

const MANAGED_DEVICES_PAGE = z.object({
  value: z.array(z.object({ id: z.string().min(1), serialNumber: z.string().nullish() })),
  '@odata.nextLink': z.string().optional(),
});

export async function readIntuneInventory(
  source: Extract<MdmInventorySource, { provider: 'intune' }>,
): Promise<MdmInventory> {
  const graph = new URL(`${source.graphUrl}/`);
  const token = await clientCredentialsToken(source.tokenUrl, {
    client_id: source.clientId,
    client_secret: source.clientSecret.reveal(),
    scope: `${graph.origin}/.default`,
  });
  const headers = { authorization: `Bearer ${token}`, accept: 'application/json', ConsistencyLevel: 'eventual' };
  const inventory: MdmInventory = { serials: new Set(), ids: new Set() };
  let next: string | undefined = new URL('deviceManagement/managedDevices?$select=id,serialNumber', graph).href;
  for (let pages = 0; next !== undefined; pages++) {
    if (pages >= MAX_PAGES) throw new MdmInventoryError(`Graph gave more than ${MAX_PAGES} pages`);
    if (new URL(next).origin !== graph.origin)
      throw new MdmInventoryError(`Graph's @odata.nextLink leads to another origin (${new URL(next).origin})`);
    const page: z.infer<typeof MANAGED_DEVICES_PAGE> = await requestJson(next, { headers }, MANAGED_DEVICES_PAGE);
    for (const device of page.value) {
      inventory.ids.add(device.id);
      if (device.serialNumber !== undefined && device.serialNumber !== null && device.serialNumber !== '')
        inventory.serials.add(device.serialNumber);
    }
    next = page['@odata.nextLink'];
  }
  return inventory;
}
