// Legal holds: an administrator keeps one user's records (session history, the client's own
// addresses in it, the audit rows and revocation receipts about them) past their retention, for
// an abuse case or an order, until the hold is released or its `until` passes; the housekeeping
// then removes them at its next run. A hold on a device keeps its user's records, since the
// history is kept per user. A user id may be held although the user was destroyed, while any
// record still names it; an id that nothing names is refused, as a likely typing error.
import type { LegalHoldInfo } from '../../protocol/admin-api.js';
import type { DeviceId, UserId } from '../../shared/ids.js';
import { asUserId } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import { timeOrderedId } from '../../shared/time-ordered-id.js';
import { hasAuditRecords } from '../../storage/audit-log.js';
import { hasConnectionHistory } from '../../storage/connection-log.js';
import { findDevice } from '../../storage/devices.js';
import {
  findLegalHold,
  insertLegalHold,
  listLegalHolds,
  releaseStoredLegalHold,
  type StoredLegalHold,
} from '../../storage/legal-holds.js';
import { findUser } from '../../storage/users.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';

/** A hold ends at most this long after it is made; a longer case makes a new one. */
export const LONGEST_HOLD_YEARS = 10;

export interface NewLegalHold {
  readonly userId?: UserId;
  readonly deviceId?: DeviceId;
  readonly reason: string;
  /** ATOM. */
  readonly until: string;
}

export async function createLegalHold(ctx: PortalContext, spec: NewLegalHold): Promise<LegalHoldInfo> {
  const now = ctx.clock.now();
  checkUntil(spec.until, now);
  const userId = await heldUserOf(ctx, spec);
  const hold: StoredLegalHold = {
    // Time-ordered, so that holds made in the same second are listed newest first too.
    holdId: `lh_${timeOrderedId().replaceAll('-', '')}`,
    userId,
    deviceId: spec.deviceId ?? null,
    reason: spec.reason,
    createdAt: formatAtom(now),
    until: spec.until,
    releasedAt: null,
  };
  await ctx.events.change(ctx.db, async (trx, announce) => {
    await insertLegalHold(trx, hold);
    await announce({
      type: 'legal_hold.created',
      at: now,
      holdId: hold.holdId,
      userId: asUserId(userId),
      deviceId: spec.deviceId ?? null,
    });
  });
  return toInfo(hold, now);
}

/** Every stored hold, newest first: in force, released, or expired (until the housekeeping prunes it). */
export async function readLegalHolds(ctx: PortalContext): Promise<LegalHoldInfo[]> {
  const now = ctx.clock.now();
  return (await listLegalHolds(ctx.db)).map((hold) => toInfo(hold, now));
}

/** Ends a hold now: its records go at the housekeeping's next run, if older than their retention. */
export async function releaseLegalHold(ctx: PortalContext, holdId: string): Promise<LegalHoldInfo> {
  const now = ctx.clock.now();
  const at = formatAtom(now);
  return ctx.events.change(ctx.db, async (trx, announce) => {
    const hold = await findLegalHold(trx, holdId);
    if (hold === undefined) throw new PortalError('no-such-legal-hold', `no legal hold has the id ${holdId}`);
    if (!(await releaseStoredLegalHold(trx, holdId, at))) {
      // Read again: a release that committed while this one waited for the row (PostgreSQL) is
      // seen only by a statement after it; the hold read above would call it expired.
      const ended = (await findLegalHold(trx, holdId)) ?? hold;
      const why = ended.releasedAt !== null ? `was released at ${ended.releasedAt}` : `expired at ${ended.until}`;
      throw new PortalError('conflict', `legal hold ${holdId} ${why}`);
    }
    await announce({
      type: 'legal_hold.released',
      at: now,
      holdId,
      userId: asUserId(hold.userId),
      deviceId: hold.deviceId as DeviceId | null,
    });
    return toInfo({ ...hold, releasedAt: at }, now);
  });
}

function checkUntil(until: string, now: Date): void {
  const end = Date.parse(until);
  if (end <= now.getTime())
    throw new PortalError(
      'invalid-parameter',
      `until (${until}) must be in the future: a hold that ended holds nothing`,
    );
  const latest = new Date(now);
  latest.setUTCFullYear(latest.getUTCFullYear() + LONGEST_HOLD_YEARS);
  if (end > latest.getTime())
    throw new PortalError('invalid-parameter', `until (${until}) must be within ${LONGEST_HOLD_YEARS} years`);
}

/** The user whose records the hold keeps: the one named, or the device's. */
async function heldUserOf(ctx: PortalContext, spec: NewLegalHold): Promise<string> {
  if (spec.userId !== undefined && spec.deviceId !== undefined)
    throw new PortalError('invalid-parameter', 'give user_id or device_id, not both');
  if (spec.deviceId !== undefined) {
    const device = await findDevice(ctx.db, spec.deviceId);
    if (device === undefined) throw new PortalError('no-such-device', `no device has the id ${spec.deviceId}`);
    return device.userId;
  }
  const { userId } = spec;
  if (userId === undefined) throw new PortalError('invalid-parameter', 'user_id or device_id is required');
  const known =
    (await findUser(ctx.db, userId)) !== undefined ||
    (await hasConnectionHistory(ctx.db, userId)) ||
    (await hasAuditRecords(ctx.db, userId));
  if (!known) throw new PortalError('no-such-user', `user ${userId} does not exist and no record names them`);
  return userId;
}

function toInfo(hold: StoredLegalHold, now: Date): LegalHoldInfo {
  const state = hold.releasedAt !== null ? 'released' : Date.parse(hold.until) <= now.getTime() ? 'expired' : 'active';
  return {
    hold_id: hold.holdId,
    user_id: hold.userId,
    device_id: hold.deviceId,
    reason: hold.reason,
    created_at: hold.createdAt,
    until: hold.until,
    released_at: hold.releasedAt,
    state,
  };
}
