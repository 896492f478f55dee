// Revocation receipts: a disable_user, destroy, delete_connection or expiry is
// answered before every node took the configurations away, so the administrator gets a receipt
// that says when each node did. The receipt is written with the change, in its transaction (by
// the listener src/listeners/revocation-receipts.ts, from the events the change announces);
// this module confirms each configuration on its node when the node answered its removal or
// disconnect, or when a reconcile pass removed it (src/core/reconcile/pass.ts), and moves the
// receipt: `applied` once every node confirmed, `overdue` once pending past
// `revocationDeadline`, `superseded` when enable_user came first. Each move is a conditional
// update, so of several portal instances one announces it.
import { formatAtom } from '../../shared/time.js';
import { timeOrderedId } from '../../shared/time-ordered-id.js';
import { asRevocationId, type NodeNumber, type ProfileId, type RevocationId, type UserId } from '../../shared/ids.js';
import type { OpenVpnCertificate } from '../../storage/certificates.js';
import {
  confirmRevocationNodes,
  revocationNodeRows,
  type ReceiptConfirmation,
  type RevocationNodeRow,
} from '../../storage/revocation-nodes.js';
import {
  findRevocation,
  listRevocations,
  markRevocationsApplied,
  markRevocationOverdue,
  pendingRevocationsRequestedBefore,
  revocationsReadyToApply,
  type RevocationState,
  type StoredRevocation,
} from '../../storage/revocations.js';
import type { Db } from '../../storage/database.js';
import { describeKey } from '../admin-call.js';
import { assertProfileAllowed, reachableProfiles, withinReach } from '../access/index.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import type { RevocationNotice } from '../events.js';
import { removePeersFromNodes, type PeerRemoval, disconnectOpenVpnClients } from '../nodes/index.js';
import { listIn } from '../../shared/list-in.js';

/** Receipts moved to overdue per pass. */
const OVERDUE_BATCH = 100;
/** Receipts read per page while filtering by the key's profiles. */
const LIST_PAGE = 200;

export interface ReceiptNode {
  readonly nodeNumber: NodeNumber;
  readonly state: 'pending' | 'applied';
  /** When the node's last configuration was confirmed gone; null while pending. */
  readonly appliedAt: string | null;
  readonly connectionIds: readonly string[];
}

/** A stored receipt with what its nodes confirmed. */
export interface RevocationReceipt extends Omit<StoredRevocation, 'revocationId'> {
  readonly revocationId: RevocationId;
  readonly connectionIds: readonly string[];
  readonly nodes: readonly ReceiptNode[];
  readonly profileIds: readonly ProfileId[];
}

/** The id of a new receipt; the use case puts it into the events it announces and answers it in a header. */
export function newRevocationId(ctx: PortalContext): RevocationId {
  return asRevocationId(timeOrderedId(ctx.clock.now().getTime()));
}

/** One receipt per user, for a change that revokes configurations of many users (the expiry sweep). */
export function revocationIdPerUser(ctx: PortalContext): (userId: UserId) => RevocationId {
  const ids = new Map<UserId, RevocationId>();
  return (userId) => {
    const id = ids.get(userId) ?? newRevocationId(ctx);
    ids.set(userId, id);
    return id;
  };
}

/**
 * Takes configurations off their nodes (peers removed, OpenVPN clients disconnected) and
 * confirms on the receipts what the nodes answered; what they did not stays pending until a
 * reconcile pass takes it away.
 */
export async function revokeOnNodes(
  ctx: PortalContext,
  revocationIds: readonly RevocationId[],
  removals: readonly PeerRemoval[],
  certificates: readonly OpenVpnCertificate[],
  why: string,
): Promise<void> {
  const [removed, disconnected] = await Promise.all([
    removePeersFromNodes(ctx, removals, why),
    disconnectOpenVpnClients(ctx, certificates, why),
  ]);
  if (revocationIds.length === 0) return;
  const confirming = ctx.receiptConfirmations.confirm(
    revocationIds,
    [
      ...removed.map((removal) => ({ nodeNumber: removal.nodeNumber, connectionId: removal.publicKey })),
      ...disconnected.map((certificate) => ({
        nodeNumber: certificate.nodeNumber,
        connectionId: certificate.commonName,
      })),
    ],
    (confirmations) => confirmRemovals(ctx, confirmations),
  );
  // The revocation itself committed: a database that fails now leaves the receipt pending (the
  // next reconcile pass confirms it), it does not fail the call.
  await confirming.catch((error: unknown) =>
    ctx.logger.warn(
      { err: error, revocationIds },
      `${why}: the nodes' confirmations could not be recorded; the next reconcile pass records them`,
    ),
  );
}

/**
 * Marks what the nodes confirmed gone, each on its own receipts, then applies (and announces) the
 * receipts no node is pending for any more.
 */
export async function confirmRemovals(
  ctx: PortalContext,
  confirmations: readonly ReceiptConfirmation[],
): Promise<void> {
  const revocationIds = [...new Set(confirmations.flatMap((confirmation) => confirmation.revocationIds))];
  if (revocationIds.length === 0) return;
  // The portal's own seam: what follows from a call already recorded with it is no second call.
  await ctx.events.unbound().change(ctx.db, async (trx, announce) => {
    const at = ctx.clock.now();
    await confirmRevocationNodes(trx, confirmations, formatAtom(at));
    const applied = await markRevocationsApplied(trx, revocationIds, formatAtom(at));
    for (const receipt of await receiptsOf(trx, applied)) {
      await announce({ type: 'revocation.applied', at, revocation: noticeOf(receipt) });
    }
  });
}

/**
 * The periodic check (src/core/revocations/deadlines.ts): applies receipts whose last node
 * confirmed while another instance confirmed another node (neither saw the other's row), and
 * moves those pending past `revocationDeadline` to overdue, announcing each once.
 */
export async function checkRevocationDeadlines(ctx: PortalContext): Promise<number> {
  const ready = await revocationsReadyToApply(ctx.db);
  if (ready.length > 0) await confirmRemovals(ctx, [{ revocationIds: ready.map(asRevocationId), confirmed: [] }]);
  const deadline = formatAtom(new Date(ctx.clock.now().getTime() - ctx.config.revocationDeadlineMs));
  let overdue = 0;
  for (;;) {
    // Strictly before: requested_at is kept to the second, so a receipt is never called overdue early.
    const due = await pendingRevocationsRequestedBefore(ctx.db, deadline, OVERDUE_BATCH);
    if (due.length === 0) break;
    overdue += await ctx.events.change(ctx.db, async (trx, announce) => {
      const at = ctx.clock.now();
      let claimed = 0;
      for (const revocationId of due) {
        if (!(await markRevocationOverdue(trx, revocationId, formatAtom(at)))) continue;
        const notice = await readNotice(trx, revocationId);
        await announce({ type: 'revocation.overdue', at, revocation: notice });
        ctx.logger.warn(
          {
            revocationId,
            userId: notice.userId,
            pendingNodes: notice.nodes.filter((node) => node.state === 'pending').map((node) => node.nodeNumber),
          },
          `revocation ${revocationId} is overdue: not every node confirmed the removal within ${ctx.config.revocationDeadlineMs / 1000} s`,
        );
        claimed++;
      }
      return claimed;
    });
    if (due.length < OVERDUE_BATCH) break;
  }
  return overdue;
}

/** One receipt; a key limited to some profiles is refused (403) one that took away a configuration outside them, as delete_connection would be. */
export async function readReceipt(ctx: PortalContext, revocationId: string): Promise<RevocationReceipt> {
  const stored = await findRevocation(ctx.db, revocationId);
  const receipt = stored === undefined ? undefined : (await receiptsOf(ctx.db, [stored]))[0];
  if (receipt === undefined) throw new PortalError('no-such-revocation', `no revocation "${revocationId}"`);
  for (const profileId of receipt.profileIds) assertProfileAllowed(ctx, profileId);
  if (!visibleTo(ctx, receipt) && ctx.call !== undefined) {
    throw new PortalError(
      'not-allowed',
      `${describeKey(ctx.call)} may not read revocation "${revocationId}": it took no configuration away in the key's profiles`,
    );
  }
  return receipt;
}

/** Receipts newest first, of the states asked for, that the key may see. */
export async function listReceipts(
  ctx: PortalContext,
  filter: { readonly states?: readonly RevocationState[]; readonly userId?: UserId; readonly limit: number },
): Promise<RevocationReceipt[]> {
  const found: RevocationReceipt[] = [];
  let beforeId: string | undefined;
  // A limited key's receipts are chosen by the database: a key that may see few of many
  // receipts does not have them all read and judged here, page after page.
  const reachable = reachableProfiles(ctx);
  while (found.length < filter.limit) {
    const page = await listRevocations(ctx.db, {
      ...filter,
      ...(beforeId === undefined ? {} : { beforeId }),
      ...(reachable === null ? {} : { withinProfiles: reachable }),
      limit: LIST_PAGE,
    });
    for (const receipt of await receiptsOf(ctx.db, page))
      if (visibleTo(ctx, receipt) && found.length < filter.limit) found.push(receipt);
    if (page.length < LIST_PAGE) break;
    beforeId = page[page.length - 1]?.revocationId;
  }
  return found;
}

/**
 * A key limited to some profiles sees a receipt only when every configuration in it is of its
 * profiles (and there is one): it learns nothing of users or configurations outside its reach.
 */
function visibleTo(ctx: PortalContext, receipt: RevocationReceipt): boolean {
  if (reachableProfiles(ctx) === null) return true;
  return receipt.profileIds.length > 0 && receipt.profileIds.every((profileId) => withinReach(ctx, profileId));
}

async function receiptsOf(db: Db, stored: readonly StoredRevocation[]): Promise<RevocationReceipt[]> {
  const rows = await revocationNodeRows(
    db,
    stored.map((revocation) => revocation.revocationId),
  );
  const rowsOf = new Map<string, RevocationNodeRow[]>();
  for (const row of rows) listIn(rowsOf, row.revocationId).push(row);
  return stored.map((revocation) => {
    const own = rowsOf.get(revocation.revocationId) ?? [];
    return {
      ...revocation,
      revocationId: asRevocationId(revocation.revocationId),
      connectionIds: [...new Set(own.map((row) => row.connectionId))],
      nodes: nodesOf(own),
      profileIds: [...new Set(own.map((row) => row.profileId))],
    };
  });
}

/** A node is applied once every configuration of the receipt on it is; then at the last one's time. */
function nodesOf(rows: readonly RevocationNodeRow[]): ReceiptNode[] {
  const byNode = new Map<NodeNumber, RevocationNodeRow[]>();
  for (const row of rows) listIn(byNode, row.nodeNumber).push(row);
  return [...byNode]
    .sort(([a], [b]) => a - b)
    .map(([nodeNumber, own]) => {
      const pending = own.some((row) => row.appliedAt === null);
      const appliedAt = pending
        ? null
        : (own
            .map((row) => row.appliedAt ?? '')
            .sort()
            .at(-1) ?? null);
      return {
        nodeNumber,
        state: pending ? 'pending' : 'applied',
        appliedAt,
        connectionIds: own.map((row) => row.connectionId),
      };
    });
}

async function readNotice(db: Db, revocationId: string): Promise<RevocationNotice> {
  const stored = await findRevocation(db, revocationId);
  const [receipt] = stored === undefined ? [] : await receiptsOf(db, [stored]);
  if (receipt === undefined) throw new Error(`revocation ${revocationId} vanished inside its own transaction`);
  return noticeOf(receipt);
}

function noticeOf(receipt: RevocationReceipt): RevocationNotice {
  return {
    revocationId: receipt.revocationId,
    userId: receipt.userId,
    connectionIds: receipt.connectionIds,
    nodes: receipt.nodes.map(({ nodeNumber, state, appliedAt }) => ({ nodeNumber, state, appliedAt })),
  };
}
