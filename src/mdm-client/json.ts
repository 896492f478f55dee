// A plain inventory for MDMs without a built-in client (or an export script): a URL answering a
// JSON array, fetched with the configured headers. An entry is a device's serial or id (a
// string), or an object `{"serial": …, "id": …, "compliant": true|false}` naming it by either or
// both; `compliant` is the MDM's verdict, and an object without it only says the device is managed.
import { z } from 'zod';
import type { MdmInventorySource } from '../config/portal-config.js';
import { describeUrl, MdmInventoryError, requestJson } from './http.js';
import type { MdmDeviceCompliance, MdmInventory, MdmReadOptions } from './model.js';

const IDENTIFIER = z.string().min(1, 'an empty string names no device');
const DEVICE_OBJECT = z
  .strictObject({
    serial: z.string().min(1).optional(),
    id: z.string().min(1).optional(),
    compliant: z.boolean().optional(),
  })
  .refine((entry) => entry.serial !== undefined || entry.id !== undefined, 'an object needs "serial" or "id"');
/** How much of a malformed entry a message quotes. */
const QUOTED_CHARACTERS = 120;

export async function readJsonInventory(
  source: Extract<MdmInventorySource, { provider: 'json' }>,
  options: MdmReadOptions,
): Promise<MdmInventory> {
  const headers = {
    accept: 'application/json',
    ...Object.fromEntries(Object.entries(source.headers).map(([name, value]) => [name, value.reveal()])),
  };
  const entries = await requestJson(source.url, { headers }, z.array(z.unknown()));
  const serials = new Set<string>();
  const ids = new Set<string>();
  const compliance: MdmDeviceCompliance[] = [];
  for (const [index, raw] of entries.entries()) {
    const entry = parseEntry(raw);
    if (typeof entry === 'object' && 'problem' in entry) throw malformed(source.url, index, raw, entry.problem);
    if (typeof entry === 'string') {
      // A bare string does not say which it is: it is looked into for either.
      serials.add(entry);
      ids.add(entry);
      continue;
    }
    if (entry.serial !== undefined) serials.add(entry.serial);
    if (entry.id !== undefined) ids.add(entry.id);
    if (options.compliance && entry.compliant !== undefined)
      compliance.push({
        serial: entry.serial ?? null,
        id: entry.id ?? null,
        state: { kind: entry.compliant ? 'compliant' : 'noncompliant' },
        lastCheckIn: null,
      });
  }
  return { serials, ids, compliance };
}

type Entry = string | z.infer<typeof DEVICE_OBJECT>;

/** An entry, each kind checked by its own schema so that the message says what is wrong with it. */
function parseEntry(raw: unknown): Entry | { readonly problem: string } {
  const parsed =
    typeof raw === 'string'
      ? IDENTIFIER.safeParse(raw)
      : typeof raw === 'object' && raw !== null && !Array.isArray(raw)
        ? DEVICE_OBJECT.safeParse(raw)
        : null;
  if (parsed === null) return { problem: 'a string, or an object with "serial" and/or "id"' };
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  if (issue === undefined) return { problem: 'invalid' };
  return { problem: `${issue.message}${issue.path.length > 0 ? ` at "${issue.path.join('.')}"` : ''}` };
}

/** The inventory is unreadable: which entry (by position and text) and why. */
function malformed(url: string, index: number, raw: unknown, problem: string): MdmInventoryError {
  const text = JSON.stringify(raw) ?? String(raw);
  const quoted = text.length > QUOTED_CHARACTERS ? `${text.slice(0, QUOTED_CHARACTERS)}…` : text;
  return new MdmInventoryError(`${describeUrl(url)}: entry ${index} (${quoted}) is not a device: ${problem}`);
}
