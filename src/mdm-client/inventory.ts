// The MDM's inventory: which devices the MDM still manages, read from Intune
// (Microsoft Graph), Jamf Pro or a plain JSON list. The portal compares it with its registered
// devices (src/core/devices/mdm-inventory.ts), and, where the MDM says it, their compliance
// (src/core/devices/compliance.ts); an inventory that cannot be read throws
// MdmInventoryError and is never taken for an empty one.
import type { MdmInventorySource } from '../config/portal-config.js';
import { readIntuneInventory } from './intune.js';
import { readJamfInventory } from './jamf.js';
import { readJsonInventory } from './json.js';

import type { MdmInventory, MdmReadOptions } from './model.js';

export { MdmInventoryError } from './http.js';
export type { MdmComplianceState, MdmDeviceCompliance, MdmInventory, MdmReadOptions } from './model.js';

/** The inventory; with `compliance`, each device's compliance too where the MDM reports it here (Intune, a JSON list). */
export function readMdmInventory(
  source: MdmInventorySource,
  options: MdmReadOptions = { compliance: false },
): Promise<MdmInventory> {
  switch (source.provider) {
    case 'intune':
      return readIntuneInventory(source, options);
    case 'jamf':
      return readJamfInventory(source);
    case 'json':
      return readJsonInventory(source, options);
  }
}
