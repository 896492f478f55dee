// Enrollment proven by the device's MDM certificate, with no token: the TLS listener checked
// the certificate (src/keys/client-certificate.ts); here the device id it carries finds the
// registered device (by serial, or mdm_id as `deviceId.matches` says), which gets its
// configuration with its own key, bound to that certificate and ending no later than it. A
// certificate can only ever reach the device it names; an id no live device has is refused (403),
// and so is one no Admin API call could name (it can be no device the administrator registered),
// and, with `registerAs`, one whose e-mail address names another user than the device's.
import { randomUUID } from 'node:crypto';
import type { VerifiedClientCertificate } from '../../keys/client-certificate.js';
import type { Platform } from '../../shared/platforms.js';
import { param } from '../../protocol/admin-api-params.js';
import type { ProfileId, UserId, WireGuardKey } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import { destroyedAnyCase } from '../../storage/destroyed-users.js';
import {
  findLiveDevice,
  findRetiredDeviceOfCertificate,
  findRetiredDeviceOfUser,
  type StoredDevice,
} from '../../storage/devices.js';
import {
  clearProfileCheck,
  findScimUserNamed,
  findScimUserOfUser,
  noteRegistrationCheck,
  profileCheckPending,
  type RegistrationNote,
} from '../../storage/scim-users.js';
import { findUser } from '../../storage/users.js';
import { appliedMappingIfOther, groupGrantsOfUser, groupGrantsUnderAll } from '../access/index.js';
import { registerDevice, retireDevice, type DeviceRegistration } from '../devices/index.js';
import type { PortalContext } from '../context.js';
import { createConfiguration, type IssuedConfiguration } from '../issuing/index.js';
import { DEFAULT_ENROLLMENT_DISPLAY_NAME } from './tokens.js';
import { PortalError } from '../errors.js';

export interface CertificateEnrollment {
  readonly certificate: VerifiedClientCertificate;
  readonly publicKey: WireGuardKey | undefined;
  readonly csr: string | undefined;
  readonly preferTcp: boolean;
  readonly accept: string | undefined;
  /** When sent, they must be the registered device's. */
  readonly profileId: ProfileId | undefined;
  readonly platform: Platform | undefined;
}

/**
 * `registerAs`: an unregistered device id registers a device for the user the certificate names
 * (its first subjectAltName e-mail address), in the configured profile (409 when the request
 * names another), with the request's platform or the configured one. Undefined without
 * `registerAs`; 403 when the certificate names no user, or one no Admin API call could name
 * (the rule of `user_id`: 1 to 255 characters, no NUL), as the administrator could then neither
 * find, disable nor destroy that user; when it is the certificate of a retired device, or its
 * device id that of a retired device of the same user; and when the directory's groups decide the
 * profile for the user and none of theirs grants it.
 */
async function selfRegister(
  ctx: PortalContext,
  rule: NonNullable<PortalContext['config']['enrollment']['clientCertificate']>,
  enrollment: CertificateEnrollment,
): Promise<StoredDevice | undefined> {
  const registerAs = rule.registerAs;
  if (registerAs === null) return undefined;
  // Retiring is final: a certificate a retired device proved itself with (the one it was bound
  // to, or an earlier one) does not bring it back as a new device (an administrator may
  // register it anew, and it then enrolls).
  const { deviceId, issuer, serialNumber } = enrollment.certificate;
  const retired = await findRetiredDeviceOfCertificate(ctx.db, rule.deviceId.matches, deviceId, {
    issuer,
    serialNumber,
  });
  if (retired !== undefined)
    throw new PortalError(
      'not-allowed',
      `the client certificate is one retired device ${retired.deviceId} enrolled with; a retired device does not register itself again`,
    );
  const userId = await certificateUser(ctx, enrollment.certificate);
  await refuseRetiredDeviceOfUser(ctx, rule.deviceId.matches, deviceId, userId);
  // Destroying is final as well: the devices went with the user, and their certificates, still
  // valid, would otherwise make the user again, also with the address in other letters (the
  // directory deleted `Alice@Example.org`, the certificate says `alice@example.org`). Once an
  // administrator (or the directory) made the user again, its devices register themselves as before.
  if ((await destroyedAnyCase(ctx.db, userId)) && (await findUser(ctx.db, userId)) === undefined)
    throw new PortalError(
      'not-allowed',
      "the client certificate's user was destroyed here; a device does not make a destroyed user again by registering itself (an administrator may register it, or make the user again)",
    );
  // The profile decides what the tunnel reaches: the administrator's to choose, not the device's.
  if (enrollment.profileId !== undefined && enrollment.profileId !== registerAs.profileId)
    throw new PortalError(
      'conflict',
      `a device that registers itself is registered for profile "${registerAs.profileId}", not "${enrollment.profileId}"`,
    );
  const platform = enrollment.platform ?? registerAs.platform;
  if (platform === null) throw new PortalError('invalid-parameter', 'a device that registers itself needs "platform"');
  if (await groupsWithhold(ctx, userId, registerAs.profileId)) throw notGrantedByGroups(userId, registerAs.profileId);
  return registerHeldToGroups(ctx, {
    userId,
    profileId: registerAs.profileId,
    platform,
    serial: rule.deviceId.matches === 'serial' ? deviceId : undefined,
    mdmId: rule.deviceId.matches === 'mdm_id' ? deviceId : undefined,
  });
}

/**
 * The user a certificate registers its device for: the one its first subjectAltName e-mail
 * address names; 403 when it names none, or one no Admin API call could name. A user the
 * directory provisioned is found letter case aside, as SCIM compares userNames (RFC 7643) and as
 * an address is compared with a device's user (refuseAnotherUsersDevice): a certificate of
 * `Alice@Example.org` is the device of the directory's `alice@example.org`. Made a user of its
 * own, the device would be out of the directory's reach: not held to its groups, and left
 * running when the directory deactivates the person.
 */
async function certificateUser(ctx: PortalContext, certificate: VerifiedClientCertificate): Promise<UserId> {
  const email = certificate.emails[0];
  if (email === undefined)
    throw new PortalError(
      'not-allowed',
      'the client certificate names no user (no subjectAltName e-mail address) to register the device for',
    );
  const userId = param.userId.safeParse(email);
  // The address is not echoed: a NUL in it would be kept in the audit log's detail, which
  // PostgreSQL cannot store.
  if (!userId.success)
    throw new PortalError(
      'not-allowed',
      "the client certificate's subjectAltName e-mail address is no user id an Admin API call can name (1 to 255 characters, no NUL); no device is registered for it",
    );
  // Of two directory users whose names differ only in case (made before SCIM compared them so),
  // the one named exactly so.
  if ((await findScimUserOfUser(ctx.db, userId.data)) !== undefined) return userId.data;
  return (await findScimUserNamed(ctx.db, userId.data))?.userId ?? userId.data;
}

/**
 * Registers the device, and into a profile groups decide notes its user for a profile check in
 * the registration's transaction: should the second read of the groups after the commit fail
 * (or the portal stop before it), the note stays, the reconcile pass's check retires the device
 * if no group grants the profile, and until then the device enrolls only while one does
 * (refuseWhileCheckPending). A revocation stays final: nothing is given back, and a device the
 * groups grant is only made to wait for a read that works.
 */
async function registerHeldToGroups(ctx: PortalContext, registration: DeviceRegistration): Promise<StoredDevice> {
  if (!mappedProfile(ctx, registration.profileId)) return registerDevice(ctx, registration);
  const note: RegistrationNote = { fresh: randomUUID(), replaced: randomUUID() };
  const at = formatAtom(ctx.clock.now());
  const device = await registerDevice(ctx, registration, (trx) =>
    noteRegistrationCheck(trx, registration.userId, note, at),
  );
  await retireIfGroupsLetGo(ctx, device, note.fresh);
  return device;
}

/** Whether `scim.groupProfiles` names the profile: only then may groups withhold it. */
function mappedProfile(ctx: PortalContext, profileId: ProfileId): boolean {
  return [...ctx.config.scim.groupProfiles.values()].some((profiles) => profiles.includes(profileId));
}

/**
 * Retiring is final whatever the certificate: an MDM renews a device's certificate (a new serial
 * number, the same device id), and a device retired by hand does not come back with the renewed
 * one. Only for the same user: a device handed on to another person (another e-mail address)
 * registers itself for them.
 */
async function refuseRetiredDeviceOfUser(
  ctx: PortalContext,
  by: 'serial' | 'mdm_id',
  deviceId: string,
  userId: UserId,
): Promise<void> {
  const retired = await findRetiredDeviceOfUser(ctx.db, by, deviceId, userId);
  if (retired !== undefined)
    throw new PortalError(
      'not-allowed',
      `the client certificate's device id is that of retired device ${retired.deviceId} of the same user; a retired device does not register itself again, with a renewed certificate either (an administrator may register it anew)`,
    );
}

/**
 * Whether `scim.groupProfiles` decides the profile for this user (the directory provisioned
 * them, a group names it) and none of the user's groups grants it now: a device may not bring
 * back by itself what the directory took away.
 */
async function groupsWithhold(ctx: PortalContext, userId: UserId, profileId: ProfileId): Promise<boolean> {
  const grants = await groupGrantsOfUser(ctx.db, ctx.config.scim.groupProfiles, userId);
  return grants?.withholds(profileId) ?? false;
}

/**
 * Whether the directory's check of the user would take the profile: withheld by this instance's
 * mapping and, when another instance applied a different one since (a rolling restart), by that
 * one too, as the checks of an outdated instance go (src/core/directory/group-profiles.ts). A
 * retirement is final: an instance on an older mapping does not retire what the applied one grants.
 */
async function groupsTake(ctx: PortalContext, userId: UserId, profileId: ProfileId): Promise<boolean> {
  const own = ctx.config.scim.groupProfiles;
  const applied = await appliedMappingIfOther(ctx.db, own);
  const grants = await groupGrantsUnderAll(ctx.db, applied === null ? [own] : [own, applied], userId);
  return grants?.withholds(profileId) ?? false;
}

function notGrantedByGroups(userId: UserId, profileId: ProfileId): PortalError {
  return new PortalError(
    'not-allowed',
    `no directory group of user ${userId} grants profile "${profileId}"; a device does not register itself into it`,
  );
}

/**
 * After the registration committed, the groups are read again: a group change that committed
 * after the first read may have run its profile check before the device was there, and so left
 * it. Either this read sees that change (the device is retired here, as its check would have),
 * or the change committed after it and its check, which reads the user's devices after that
 * commit, finds the device. Then the registration's own note is cleared; one that replaced
 * another check's stays for the reconcile pass. A read or retirement that fails leaves it too.
 */
async function retireIfGroupsLetGo(ctx: PortalContext, device: StoredDevice, noted: string): Promise<void> {
  const withheld = await groupsTake(ctx, device.userId, device.profileId);
  if (withheld)
    await retireDevice(ctx, device.deviceId, {
      reason: `no directory group of the user grants profile "${device.profileId}"`,
    });
  await clearProfileCheck(ctx.db, device.userId, noted);
  if (withheld) throw notGrantedByGroups(device.userId, device.profileId);
}

/**
 * A registered device whose user has a profile check still to run (a self-registration whose
 * second read failed, a group change whose check did not finish) enrolls into a profile groups
 * decide only while one of the user's groups grants it: that check would retire it otherwise.
 */
async function refuseWhileCheckPending(ctx: PortalContext, device: StoredDevice): Promise<void> {
  if (!mappedProfile(ctx, device.profileId) || !(await profileCheckPending(ctx.db, device.userId))) return;
  if (await groupsWithhold(ctx, device.userId, device.profileId))
    throw new PortalError(
      'not-allowed',
      `no directory group of user ${device.userId} grants profile "${device.profileId}"; device ${device.deviceId} does not enroll into it (a check of the user's profiles is pending)`,
    );
}

/**
 * With `registerAs` the certificate names the device's user (its first subjectAltName e-mail
 * address): one that names another user than the live device's was issued for a device the MDM
 * handed on. Enrolling it as the earlier user's device would put the new user's traffic under
 * the earlier user's name, and keep it on when the new user is disabled: refused (403) until that
 * registration is retired, when the device registers itself for its new user. Letter case aside,
 * as an e-mail address's domain has none. A certificate without an address changes nothing here.
 */
function refuseAnotherUsersDevice(
  rule: NonNullable<PortalContext['config']['enrollment']['clientCertificate']>,
  certificate: VerifiedClientCertificate,
  device: StoredDevice,
): void {
  const email = certificate.emails[0];
  if (rule.registerAs === null || email === undefined) return;
  if (email.toLowerCase() === device.userId.toLowerCase()) return;
  throw new PortalError(
    'not-allowed',
    `device ${device.deviceId} is registered to another user than the client certificate names (its subjectAltName e-mail address): a device handed on registers itself for its new user once that registration is retired`,
  );
}

export async function enrollByCertificate(
  ctx: PortalContext,
  enrollment: CertificateEnrollment,
): Promise<IssuedConfiguration> {
  const rule = ctx.config.enrollment.clientCertificate;
  if (rule === null) throw new PortalError('not-allowed', 'certificate enrollment is not configured');
  if (enrollment.publicKey === undefined && enrollment.csr === undefined) {
    throw new PortalError(
      'invalid-parameter',
      'an enrollment needs the device\'s own key: "public_key" (WireGuard, as `wg pubkey` prints it) or "csr" (OpenVPN); the portal makes no key for a device',
    );
  }
  const { deviceId } = enrollment.certificate;
  // The Admin API's rule of `serial` and `mdm_id`: an id that breaks it is no device the
  // administrator registered, and one registering itself could not be looked up by it (nor, on
  // PostgreSQL, stored: longer than the column, or with a NUL, which cannot even be looked up).
  // Not echoed, as the audit log's detail could not hold a NUL.
  if (!param.deviceIdentifier.safeParse(deviceId).success)
    throw new PortalError(
      'not-allowed',
      `the client certificate's device id is no ${rule.deviceId.matches} an Admin API call can name (1 to 255 printable ASCII characters, no space)`,
    );
  const live = await findLiveDevice(ctx.db, rule.deviceId.matches, deviceId);
  if (live !== undefined) {
    refuseAnotherUsersDevice(rule, enrollment.certificate, live);
    await refuseWhileCheckPending(ctx, live);
  }
  const device = live ?? (await selfRegister(ctx, rule, enrollment));
  if (device === undefined)
    throw new PortalError(
      'not-allowed',
      `no registered device has ${rule.deviceId.matches} "${deviceId}" (the certificate's device id)`,
    );
  if (enrollment.profileId !== undefined && enrollment.profileId !== device.profileId) {
    throw new PortalError(
      'conflict',
      `device ${device.deviceId} is registered for profile "${device.profileId}", not "${enrollment.profileId}"`,
    );
  }
  const { certificate } = enrollment;
  return createConfiguration(ctx, {
    userId: device.userId,
    profileId: device.profileId,
    displayName: DEFAULT_ENROLLMENT_DISPLAY_NAME,
    preferTcp: enrollment.preferTcp,
    expiresIn: undefined,
    accept: enrollment.accept,
    ...(enrollment.publicKey === undefined ? {} : { publicKey: enrollment.publicKey }),
    ...(enrollment.csr === undefined ? {} : { csr: enrollment.csr }),
    device: { deviceId: device.deviceId },
    ...(enrollment.platform === undefined ? {} : { platform: enrollment.platform }),
    deviceCertificate: {
      subject: certificate.subject,
      issuer: certificate.issuer,
      serialNumber: certificate.serialNumber,
      notAfter: formatAtom(certificate.notAfter),
      issuerFingerprint: certificate.issuerFingerprint,
    },
  });
}
