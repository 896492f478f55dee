// The one rule that settles a node's NAT change dates the portal cannot vouch for, shared by the
// recording of a change (src/storage/nat-mappings.ts) and migration 0038, free of any table.
import { formatAtom } from '../shared/time.js';

/**
 * The dates a node's changes can be vouched for at `now`, oldest first: each no later than when
 * it was recorded nor than `now`, and each at least a second after the one before (the order
 * stays). `rows` are the node's, in the order of their dates; a date that needs no move is kept.
 */
export function settledNatDates(
  rows: readonly { readonly appliedAt: string; readonly recordedAt: string }[],
  now: string,
): string[] {
  const settled: string[] = [];
  let previous: number | undefined;
  for (const row of rows) {
    const applied = Date.parse(row.appliedAt);
    const latest = Math.min(Date.parse(row.recordedAt), Date.parse(now));
    let moment = Number.isNaN(applied) || applied > latest ? latest : applied;
    if (previous !== undefined && moment < previous + 1000) moment = previous + 1000;
    settled.push(moment === applied ? row.appliedAt : formatAtom(new Date(moment)));
    previous = moment;
  }
  return settled;
}
