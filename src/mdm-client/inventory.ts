// The MDM's inventory: which devices the MDM still manages, read from Intune
// (Microsoft Graph), Jamf Pro or a plain JSON list. The portal compares it with its registered
// devices (src/core/devices/mdm-inventory.ts); an inventory that cannot be read throws
// MdmInventoryError and is never taken for an empty one.
import type { MdmInventorySource } from '../config/portal-config.js';
import { readIntuneInventory } from './intune.js';
import { readJamfInventory } from './jamf.js';
import { readJsonInventory } from './json.js';

import type { MdmInventory } from './model.js';

export { MdmInventoryError } from './http.js';
export type { MdmInventory } from './model.js';

export function readMdmInventory(source: MdmInventorySource): Promise<MdmInventory> {
  switch (source.provider) {
    case 'intune':
      return readIntuneInventory(source);
    case 'jamf':
      return readJamfInventory(source);
    case 'json':
      return readJsonInventory(source);
  }
}
