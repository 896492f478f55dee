// What both ways of issuing a configuration share: the request, the one write that stores it
// (with its user, in one transaction, retried when it loses a race with another portal
// instance), and the event that announces it.
import type { Transaction } from 'kysely';
import type { Profile } from '../../config/portal-config.js';
import { isRolledBackForConflict, isWriteConflict } from '../../storage/errors.js';
import type { Database } from '../../storage/schema.js';
import { ensureUser } from '../../storage/users.js';
import { isPostgres } from '../../storage/database.js';
import type { GaveUp, UserOfCreate } from '../../storage/new-peer.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import type { ConfigurationRef, PortalEvent } from '../events.js';
import type { ClosingWrite } from '../../storage/closing-writes.js';
import type { DeviceId, ProfileId, UserId, WireGuardKey } from '../../shared/ids.js';
import type { Platform } from '../../shared/platforms.js';
import type { DeviceCertificate } from '../../storage/devices.js';
import {
  bindDevice,
  changedBy,
  removeReplaced,
  takeDeviceSlot,
  type DeviceReference,
  type Enrollment,
} from '../devices/index.js';
import { formatAtom } from '../../shared/time.js';
import type { ConfigurationFile } from './configuration-file.js';
import type { DeviceKeys } from './device-keys.js';
import { MIME_TYPES, type ConfigFormat } from './protocol-selection.js';

/** What `create` answers: the file and what the headers say about it. */
export interface IssuedConfiguration {
  readonly format: ConfigFormat;
  readonly contentType: string;
  /** Bytes for a signed Apple profile. */
  readonly body: string | Uint8Array;
  /** Set when the file is meant to be saved under this name (the Apple profile). */
  readonly downloadFileName: string | null;
  readonly expiresAt: Date;
}

export interface CreateConfigurationRequest {
  readonly userId: UserId;
  readonly profileId: ProfileId;
  readonly displayName: string;
  readonly preferTcp: boolean;
  readonly expiresIn: string | undefined;
  readonly accept: string | undefined;
  /**
   * The platform the configuration is for, as the caller says it: with a device it must be the
   * device's (which is the default); without one, undefined means any (the Apple profile is then for iOS).
   */
  readonly platform?: Platform;
  /** `on_demand`: overrides the profile's `appleOnDemand` in an Apple profile; undefined: the profile decides. */
  readonly onDemand?: boolean;
  /** The device's own WireGuard public key: the portal makes no key pair, the file leaves PrivateKey to the device. */
  readonly publicKey?: WireGuardKey;
  /** The device's own OpenVPN key, as a PEM PKCS#10 request: the portal certifies it, the file has no key. */
  readonly csr?: string;
  /**
   * Called inside the transaction that stores the configuration, with the answer `create` is
   * about to give: a request sent with an Idempotency-Key keeps its answer with the change, so
   * a configuration is never stored without the answer a retry will get (nor the other way round).
   * `connectionId` names the configuration the answer hands out, so the answer can be dropped
   * once that is revoked.
   */
  readonly keepAnswer?: (
    trx: Transaction<Database>,
    answer: IssuedConfiguration,
    connectionId: string,
  ) => Promise<void>;
  /**
   * Called inside the transaction that stores the configuration, once the user is known to be
   * enabled and before anything is written: an enrollment takes its token's use here, so the
   * use and the configuration commit or roll back together. It refuses by throwing.
   */
  readonly consume?: (trx: Transaction<Database>) => Promise<void>;
  /** The enrollment token redeemed for it, named in `configuration.created`. */
  readonly enrollmentTokenId?: string;
  /** The registered device it is for: it replaces the device's configuration in the profile. */
  readonly device?: DeviceReference;
  /** The MDM certificate the device proved itself with (mutual-TLS enrollment): the device is bound to it, the configuration ends no later. */
  readonly deviceCertificate?: DeviceCertificate;
}

/** One configuration being issued: the request, its profile, its times and the device's own keys. */
export interface Issue {
  readonly request: CreateConfigurationRequest;
  readonly profile: Profile;
  readonly now: Date;
  readonly expiresAt: Date;
  /** True when no `configuration.expiring` will be announced for it (it lives shorter than expiryWarning). */
  readonly expiryWarned: boolean;
  /** null: the portal makes the key. */
  readonly deviceKeys: DeviceKeys | null;
  /** The registered device it is issued to; null: to the user only. */
  readonly deviceId: DeviceId | null;
  /** The platform it is for: the request's, else the device's; undefined: any. */
  readonly platform: Platform | undefined;
}

/** Hands the answer in `format`, for the configuration `connectionId`, to the request's keepAnswer, inside the storing transaction. */
export async function keepAnswer(
  trx: Transaction<Database>,
  issue: Issue,
  format: ConfigFormat,
  file: ConfigurationFile,
  connectionId: string,
): Promise<void> {
  if (issue.request.keepAnswer === undefined) return;
  await issue.request.keepAnswer(
    trx,
    {
      format,
      contentType: MIME_TYPES[format],
      body: file.body,
      downloadFileName: file.downloadFileName,
      expiresAt: issue.expiresAt,
    },
    connectionId,
  );
}

/** Attempts at a write that lost a race (another portal instance, a busy database). */
const MAX_ATTEMPTS = 5;

/**
 * What a create's `insert` gives back: the configuration it stores, and `finish`, the change's
 * last step (src/core/events.ts), which must run the closing writes after its own writes.
 */
export interface Storing<T> {
  readonly configuration: ConfigurationRef;
  readonly finish: (trx: Transaction<Database>, closingWrites: readonly ClosingWrite[]) => Promise<T>;
}

/**
 * Stores a new configuration: `insert` runs in a transaction that has made sure the user
 * exists and is enabled (and, on PostgreSQL, holds its row so a concurrent disable or destroy
 * waits). `configuration.created` (after `user.created` for a user it made) is recorded in it,
 * then `finish` runs last, after every listener: a WireGuard create takes its address there, so
 * its pool's row, which every create of the pool queues on, is held for the final statement
 * and the commit only. The transaction is tried again when it lost a race — a unique address
 * or user taken meanwhile, a deadlock — and the events are published after it committed.
 */
export async function storeConfiguration<T>(
  ctx: PortalContext,
  issue: Issue,
  insert: (trx: Transaction<Database>) => Promise<Storing<T>>,
): Promise<T> {
  const { deviceId } = issue;
  for (let attempt = 1; ; attempt++) {
    try {
      const { stored, replaced } = await ctx.events.change(
        ctx.db,
        async (trx, announce) => {
          const user = await ensureUser(trx, issue.request.userId, formatAtom(issue.now));
          if (user.isDisabled) throw new PortalError('user-disabled', 'user is disabled');
          if (user.created) await announce({ type: 'user.created', at: issue.now, userId: user.userId });
          await issue.request.consume?.(trx);
          // One live configuration per device and profile: the one there is goes in this change.
          const replaced =
            deviceId === null
              ? null
              : await takeDeviceSlot(ctx, trx, announce, deviceId, issue.profile.profileId, issue.now);
          const { configuration, finish } = await insert(trx);
          const { enrollmentTokenId } = issue.request;
          await announce({
            type: 'configuration.created',
            at: issue.now,
            configuration,
            expiresAt: issue.expiresAt,
            ...(enrollmentTokenId === undefined ? {} : { enrollmentTokenId }),
          });
          if (deviceId !== null && replaced !== null)
            await bindDevice(
              trx,
              announce,
              deviceId,
              configuration,
              replaced,
              issue.now,
              enrollmentOf(ctx, issue.request),
              issue.request.deviceCertificate,
            );
          return { finish, replaced };
        },
        async (trx, { finish, replaced }, closingWrites) => ({ stored: await finish(trx, closingWrites), replaced }),
      );
      ctx.recentUsers.remember(issue.request.userId);
      // The replaced configuration leaves its node before the caller adds the new one.
      if (replaced !== null) await removeReplaced(ctx, replaced);
      return stored;
    } catch (error) {
      // The transaction rolled back: simply try again.
      // A deadlock's rollback was run again by the events seam already.
      if (!isWriteConflict(error) || isRolledBackForConflict(error) || attempt >= MAX_ATTEMPTS) throw error;
    }
  }
}

/** Tries of a create in one statement: a wrong guess of the user, then the other, then once more should a racing create or destroy have changed it between. */
const ONE_STATEMENT_TRIES = 3;

/** A create in one statement (storeInOneStatement): runs it for a new or a known user, with the closing writes. */
export interface CreateStatement<T> {
  readonly run: (
    user: UserOfCreate,
    closingWrites: readonly ClosingWrite[],
  ) => Promise<{ readonly stored: T } | { readonly gaveUp: GaveUp }>;
  /** What the create stored, read back when it committed but its answer was lost with the connection. */
  readonly committedAnswer: () => Promise<T>;
}

/**
 * A plain create (no device, no enrollment, no answer kept for a retry) on PostgreSQL: the user
 * and the configuration in one statement, which the server runs as its own transaction — one
 * round trip instead of four (src/storage/new-peer.ts). The statement is built for a known user
 * and, when it finds none, for a new one (announcing `user.created`), or the other way round;
 * null: the create is made the usual way (storeConfiguration), because the statement gave up
 * (a disabled user, no address to be had at once), or it cannot be one statement here.
 */
export async function storeInOneStatement<T>(
  ctx: PortalContext,
  issue: Issue,
  configuration: ConfigurationRef,
  statement: CreateStatement<T>,
): Promise<T | null> {
  const { request } = issue;
  const plain =
    request.consume === undefined &&
    request.keepAnswer === undefined &&
    request.enrollmentTokenId === undefined &&
    request.device === undefined &&
    issue.deviceId === null;
  if (!plain || !isPostgres(ctx.db)) return null;
  const user: UserOfCreate = { userId: request.userId, isNew: false, now: formatAtom(issue.now) };
  const created: PortalEvent = {
    type: 'configuration.created',
    at: issue.now,
    configuration,
    expiresAt: issue.expiresAt,
  };
  for (let attempt = 1, isNew = !ctx.recentUsers.has(request.userId); attempt <= ONE_STATEMENT_TRIES; attempt++) {
    const events: PortalEvent[] = isNew
      ? [{ type: 'user.created', at: issue.now, userId: request.userId }, created]
      : [created];
    let gaveUp: GaveUp | null = null;
    const stored = await ctx.events.changeInOneStatement(ctx.db, events, {
      run: async (closingWrites) => {
        const answer = await statement.run({ ...user, isNew }, closingWrites);
        if ('gaveUp' in answer) {
          gaveUp = answer.gaveUp;
          return null;
        }
        return answer;
      },
      committedAnswer: async () => ({ stored: await statement.committedAnswer() }),
    });
    if (stored !== null) {
      ctx.recentUsers.remember(request.userId);
      return stored.stored;
    }
    if (gaveUp === 'user-missing') {
      ctx.recentUsers.forget(request.userId);
      isNew = true;
    } else if (gaveUp === 'user-exists') isNew = false;
    else return null;
  }
  return null;
}

/** How a device got this configuration, for its history: a call's, or its own with a token or its certificate. */
function enrollmentOf(ctx: PortalContext, request: Issue['request']): Enrollment {
  const reason =
    request.deviceCertificate !== undefined
      ? `certificate ${request.deviceCertificate.serialNumber}`
      : request.enrollmentTokenId !== undefined
        ? `token ${request.enrollmentTokenId}`
        : null;
  return { by: changedBy(ctx) ?? '(device)', reason };
}
