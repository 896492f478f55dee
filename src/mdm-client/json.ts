// A plain inventory for MDMs without a built-in client (or an export script): a URL answering a
// JSON array of the devices' serials or ids, fetched with the configured headers.
import { z } from 'zod';
import type { MdmInventorySource } from '../config/portal-config.js';
import { requestJson } from './http.js';
import type { MdmInventory } from './model.js';

const IDENTIFIERS = z.array(z.string().min(1));

export async function readJsonInventory(
  source: Extract<MdmInventorySource, { provider: 'json' }>,
): Promise<MdmInventory> {
  const headers = {
    accept: 'application/json',
    ...Object.fromEntries(Object.entries(source.headers).map(([name, value]) => [name, value.reveal()])),
  };
  const identifiers = new Set(await requestJson(source.url, { headers }, IDENTIFIERS));
  // The list does not say which it holds: it is looked into for either.
  return { serials: identifiers, ids: identifiers };
}
