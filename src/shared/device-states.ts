// The states of a managed device: one list, so the storage, the Admin API's `state` parameter and
// answer, and the console's search all name the same values.

export const DEVICE_STATES = ['registered', 'active', 'suspended', 'retired'] as const;
export type DeviceState = (typeof DEVICE_STATES)[number];
