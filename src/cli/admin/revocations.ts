// `vpn-portal admin` revocation receipts: the `revocation` and `revocations` commands, and how
// every revoking command (disable, destroy, delete-connection, device retire) reports its receipt.
import { setTimeout as sleep } from 'node:timers/promises';
import type { AdminApiClient } from '../../admin-client/admin-api-client.js';
import type { RevocationInfo } from '../../protocol/admin-api.js';
import { param } from '../../protocol/admin-api-params.js';
import { formatTable } from '../table.js';
import { type AdminCommand, pageFlags, stateFlag } from './command.js';

/** How often `--wait` asks for the receipt. */
const RECEIPT_POLL_MS = 250;

export const REVOCATION_COMMANDS: Readonly<Record<string, AdminCommand>> = {
  revocation: {
    summary: 'a revocation receipt: per node, whether the removal was confirmed (an extension; --wait: until decided)',
    args: ['REVOCATION_ID'],
    flags: ['wait'],
    run: async ({ client, args, flags, json, out }) => {
      const receipt = flags.wait ? await waitForReceipt(client, args[0] ?? '') : await client.revocation(args[0] ?? '');
      if (json) out.print(JSON.stringify(receipt));
      else {
        out.print(
          `revocation ${receipt.revocation_id} (${receipt.reason} of ${receipt.user_id}, ${receipt.requested_at}): ${describeReceipt(receipt)}`,
        );
        out.print(
          formatTable(
            ['NODE', 'STATE', 'APPLIED', 'CONNECTION_IDS'],
            receipt.nodes.map((node) => [
              String(node.node_number),
              node.state,
              node.applied_at ?? '',
              node.connection_ids.join(','),
            ]),
          ),
        );
      }
      if (flags.wait && receipt.state !== 'applied') throw new RevocationNotApplied();
    },
  },
  revocations: {
    summary: 'revocation receipts, newest first (an extension; --state pending lists pending and overdue ones)',
    args: [],
    flags: ['state', 'user', 'limit'],
    run: async ({ client, flags, json, out }) => {
      const state = stateFlag(param.revocationState.options, flags.state);
      const { limit } = pageFlags(flags);
      const receipts = await client.revocations({
        ...(state === undefined ? {} : { state }),
        ...(flags.user === undefined ? {} : { user_id: flags.user }),
        ...(limit === undefined ? {} : { limit }),
      });
      if (json) {
        out.print(JSON.stringify({ revocations: receipts }));
        return;
      }
      out.print(
        formatTable(
          ['REVOCATION_ID', 'USER', 'REASON', 'STATE', 'REQUESTED', 'PENDING_NODES'],
          receipts.map((receipt) => [
            receipt.revocation_id,
            receipt.user_id,
            receipt.reason,
            receipt.state,
            receipt.requested_at,
            pendingNodes(receipt).join(','),
          ]),
        ),
      );
    },
  },
};

/** `--wait` ended with the receipt overdue or superseded: exit code 3. */
export class RevocationNotApplied extends Error {
  override readonly name = 'RevocationNotApplied';
}

/**
 * disable, destroy, delete-connection: the call, then what its revocation receipt says (at
 * once, or with --wait once it is no longer pending), so "disabled" is never printed for a
 * tunnel a node still passes without saying so.
 */
export function revokingCommand(
  summary: string,
  args: readonly string[],
  done: (args: readonly string[]) => string,
  call: (client: AdminApiClient, args: readonly string[]) => Promise<string | null>,
): AdminCommand {
  return {
    summary,
    args,
    flags: ['wait'],
    run: async ({ client, args: given, flags, json, out }) => {
      // delete-connection of a configuration the user does not have: nothing was revoked (null).
      await reportRevocation(client, await call(client, given), flags.wait, json, out, done(given), { ok: true });
    },
  };
}

/** Prints what a revoking call did and its receipt (with `wait`, once decided; not applied then: RevocationNotApplied). */
export async function reportRevocation(
  client: AdminApiClient,
  revocationId: string | null,
  wait: boolean,
  json: boolean,
  out: { print(text: string): void },
  done: string,
  answer: Record<string, unknown>,
): Promise<void> {
  if (revocationId === null) {
    out.print(json ? JSON.stringify({ ...answer, revocation: null }) : `${done}: nothing to revoke`);
    return;
  }
  const receipt = wait ? await waitForReceipt(client, revocationId) : await client.revocation(revocationId);
  out.print(
    json
      ? JSON.stringify({ ...answer, revocation: receipt })
      : `${done}: ${describeReceipt(receipt)} (revocation ${revocationId})`,
  );
  if (wait && receipt.state !== 'applied') throw new RevocationNotApplied();
}

async function waitForReceipt(client: AdminApiClient, revocationId: string): Promise<RevocationInfo> {
  for (;;) {
    const receipt = await client.revocation(revocationId);
    if (receipt.state !== 'pending') return receipt;
    await sleep(RECEIPT_POLL_MS);
  }
}

/** A receipt in words: applied on every node, or which nodes are pending. */
function describeReceipt(receipt: RevocationInfo): string {
  const nodes = (state: 'pending' | 'applied') =>
    receipt.nodes.filter((node) => node.state === state).map((node) => node.node_number);
  const list = (numbers: readonly number[]) => `node${numbers.length === 1 ? '' : 's'} ${numbers.join(', ')}`;
  switch (receipt.state) {
    case 'applied':
      return receipt.nodes.length === 0
        ? 'applied (no configuration was on a node)'
        : `applied on every node (${list(nodes('applied'))})`;
    case 'superseded':
      return 'superseded: the user was enabled again before every node confirmed';
    default: {
      const applied = nodes('applied');
      return `${receipt.state}: ${list(nodes('pending'))} did not confirm the removal yet${applied.length === 0 ? '' : `; applied on ${list(applied)}`}`;
    }
  }
}

function pendingNodes(receipt: RevocationInfo): number[] {
  return receipt.nodes.filter((node) => node.state === 'pending').map((node) => node.node_number);
}
