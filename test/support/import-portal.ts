// The portal the eduVPN import's tests bring records into: profile `employees` with WireGuard
// and OpenVPN ranges (and any others a test adds), on a node that does not answer, since the
// database is what an import changes.
import type { PortalConfigFile } from '../../src/config/schema.js';
import { startTestPortal, UNREACHABLE_NODE, type TestPortal } from './test-portal.js';

export const employeesWithOpenVpn: PortalConfigFile['ProfileList'][number] = {
  profileId: 'employees',
  displayName: 'Employees',
  hostName: 'vpn.example.org',
  wRangeFour: '10.44.0.0/24',
  wRangeSix: 'fd44::/64',
  oRangeFour: '10.45.0.0/24',
  oRangeSix: 'fd45::/64',
  nodeUrl: UNREACHABLE_NODE,
};

/**
 * A portal with `employees` and `others`, whose start-up pass (with the daily housekeeping,
 * which deletes expired authorizations) has run: it does not run between a test's imports.
 */
export async function startImportPortal(
  others: readonly PortalConfigFile['ProfileList'][number][] = [],
): Promise<TestPortal> {
  const portal = await startTestPortal({ config: { ProfileList: [employeesWithOpenVpn, ...others] } });
  await portal.reconcile();
  haveEmployeesTlsCryptKey(portal);
  return portal;
}

/**
 * Makes the tls-crypt key of `employees` here, as a portal that served OpenVPN has it (the CA and
 * the nodes' WireGuard keys, generate-secrets made): the in-memory deployments bring no key
 * files, and the import refuses OpenVPN configurations whose tls-crypt key nothing brings.
 */
export function haveEmployeesTlsCryptKey(portal: TestPortal): void {
  portal.portal.ctx.openVpnKeys.tlsCryptKey(employeesWithOpenVpn.profileId);
}
