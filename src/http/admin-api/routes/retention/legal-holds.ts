// The legal hold calls (ours): make a hold on a user's or a device's records, list the holds,
// release one. Scope admin and a key for every profile: a hold keeps records of every profile
// the user was in, and a limited key must not learn of, or keep, what lies outside its own.
import { createLegalHold, readLegalHolds, releaseLegalHold } from '../../../../core/retention/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute } from '../../admin-route.js';

export const createLegalHoldRoute = defineRoute({
  ...ADMIN_API_CALLS.createLegalHold,
  summary:
    "Keeps a user's records (or a device's user's) past their retention until `until` or a release: session history, client addresses, audit rows, revocation receipts",
  since: 'extension',
  source: 'post',
  needsEveryProfile: true,
  answerDoc: 'The hold',
  async handle(ctx, { user_id, device_id, reason, until }) {
    const hold = await createLegalHold(ctx, {
      ...(user_id === undefined ? {} : { userId: user_id }),
      ...(device_id === undefined ? {} : { deviceId: device_id }),
      reason,
      until,
    });
    return { status: 200, json: { legal_hold: hold } };
  },
});

export const legalHoldsRoute = defineRoute({
  ...ADMIN_API_CALLS.legalHolds,
  summary: 'The legal holds: in force, released and expired (until the housekeeping prunes them)',
  since: 'extension',
  source: 'query',
  needsEveryProfile: true,
  answerDoc: 'Every stored hold, newest first',
  async handle(ctx) {
    return { status: 200, json: { legal_holds: await readLegalHolds(ctx) } };
  },
});

export const releaseLegalHoldRoute = defineRoute({
  ...ADMIN_API_CALLS.releaseLegalHold,
  summary: "Ends a legal hold now: the housekeeping's next run removes what is older than its retention",
  since: 'extension',
  source: 'post',
  needsEveryProfile: true,
  answerDoc: 'The released hold',
  async handle(ctx, { hold_id }) {
    return { status: 200, json: { legal_hold: await releaseLegalHold(ctx, hold_id) } };
  },
});
