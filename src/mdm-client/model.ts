// What every MDM client answers, apart from the clients so that none imports another.

/** The devices the MDM manages: their serial numbers and their ids (Intune's managed device id, Jamf's UDID). */
export interface MdmInventory {
  readonly serials: Set<string>;
  readonly ids: Set<string>;
}
