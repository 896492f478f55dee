// eduVPN's check of a profile's `aclPermissionList` at an OpenVPN connect (its node API's
// /connect, eduVPN 3.x): a profile with a list lets in only a user holding one of the listed
// permissions, compared as exact strings (an empty list lets in nobody). This portal does not
// enforce the list (users here carry no permissions), so the import leaves the OpenVPN
// certificates eduVPN refuses so: brought, they would connect here, giving back access eduVPN
// withheld. eduVPN does not check the list for WireGuard peers, which are brought.
import { findProfile, type PortalConfig } from '../../config/portal-config.js';
import type { EduVpnDeployment } from '../../eduvpn/deployment.js';
import { permissionsOf } from '../../eduvpn/eduvpn-rows.js';
import type { UserId } from '../../shared/ids.js';

/** Each user's permissions that some profile's `aclPermissionList` names; users holding none of them are absent. */
export type AclPermissions = ReadonlyMap<UserId, readonly string[]>;

/**
 * Reads eduVPN's users for the permissions the profiles' lists name (none read when no profile
 * has a list, or no list names one).
 */
export async function aclPermissionsOfUsers(
  config: PortalConfig,
  deployment: EduVpnDeployment,
): Promise<AclPermissions> {
  const named = new Set(config.profiles.flatMap((profile) => profile.aclPermissionList ?? []));
  const found = new Map<UserId, string[]>();
  if (named.size === 0) return found;
  for await (const page of deployment.users())
    for (const user of page) {
      const held = (permissionsOf(user.permissionList) ?? []).filter((permission) => named.has(permission));
      if (held.length > 0) found.set(user.userId, held);
    }
  return found;
}

/**
 * Why eduVPN refuses `certificate` at connect for its profile's `aclPermissionList` here (the
 * list converted from eduVPN's `config.php`), or undefined when it lets it in.
 */
export function aclRefusal(
  config: PortalConfig,
  certificate: { readonly userId: UserId; readonly profileId: string },
  permissions: AclPermissions,
): string | undefined {
  const list = findProfile(config, certificate.profileId)?.aclPermissionList ?? null;
  if (list === null) return undefined;
  const held = permissions.get(certificate.userId) ?? [];
  if (held.some((permission) => list.includes(permission))) return undefined;
  return `eduVPN refuses it at connect: its user ${certificate.userId} holds none of profile ${certificate.profileId}'s aclPermissionList [${list.join(', ')}], which this portal does not check: the import brings it no more`;
}
