// What every MDM client answers, apart from the clients so that none imports another.

/** The devices the MDM manages: their serial numbers and their ids (Intune's managed device id, Jamf's UDID). */
export interface MdmInventory {
  readonly serials: Set<string>;
  readonly ids: Set<string>;
  /** What the MDM said of each device's compliance; empty unless it was asked for and the MDM says it. */
  readonly compliance: readonly MdmDeviceCompliance[];
}

/** One device's record of compliance, as the MDM reported it. */
export interface MdmDeviceCompliance {
  readonly serial: string | null;
  readonly id: string | null;
  readonly state: MdmComplianceState;
  /** When the device last checked in with the MDM; null when the MDM does not say. */
  readonly lastCheckIn: Date | null;
}

/**
 * The MDM's verdict: Intune's `complianceState` (`inGracePeriod` with the grace period's end,
 * `unknown`, `conflict`, `error` or any other value as `undetermined`), or a JSON entry's `compliant`.
 */
export type MdmComplianceState =
  | { readonly kind: 'compliant' }
  | { readonly kind: 'noncompliant' }
  | { readonly kind: 'in-grace-period'; readonly until: Date | null }
  | { readonly kind: 'undetermined'; readonly reported: string };

/** What a client is asked to read besides the devices. */
export interface MdmReadOptions {
  /** Read each device's compliance too. */
  readonly compliance: boolean;
}
