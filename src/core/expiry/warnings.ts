// `configuration.expiring`: announced once per configuration, `expiryWarning` (default P7D)
// before it expires, so the systems around the VPN can have it renewed (/extend) in time. A
// configuration made or extended for no longer than `expiryWarning` is not announced: whoever
// made it knows when it ends. Whether the warning is still to come is stored with the
// configuration (`expiry_warned`) and set in the transaction that announces it, by an update
// that only one portal instance can win, so it fires once whatever restarts or how many
// instances run the pass. The scheduler (src/core/reconcile/scheduler.ts) runs the pass when the next
// warning is due and with every full pass.
import type { PortalConfig } from '../../config/portal-config.js';
import { addDuration, subtractDuration } from '../../shared/iso-duration.js';
import { formatAtom } from '../../shared/time.js';
import { certificatesDueForExpiryWarning } from '../../storage/certificates.js';
import { earliestUnwarnedExpiry, markExpiryWarned, type ConfigurationTable } from '../../storage/expiry-change.js';
import { peersDueForExpiryWarning } from '../../storage/wg-peers.js';
import type { PortalContext } from '../context.js';
import { openVpnConfiguration, wireGuardConfiguration, type ConfigurationRef } from '../events.js';

/** Configurations announced per transaction. */
const CHUNK = 500;

/** Whether a configuration expiring at `expiresAt`, made or extended `now`, is already past its warning (none will come). */
export function warningAlreadyPast(config: PortalConfig, now: Date, expiresAt: Date): boolean {
  return subtractDuration(expiresAt, config.expiryWarning).getTime() <= now.getTime();
}

/** Announces `configuration.expiring` for every configuration whose warning is due; returns how many this call announced. */
export async function announceExpiringConfigurations(ctx: PortalContext): Promise<number> {
  const now = ctx.clock.now();
  const window = { now: formatAtom(now), horizon: formatAtom(addDuration(now, ctx.config.expiryWarning)) };
  const announced =
    (await announceDue(
      ctx,
      now,
      'wg_peers',
      () => peersDueForExpiryWarning(ctx.db, window, CHUNK),
      wireGuardConfiguration,
    )) +
    (await announceDue(
      ctx,
      now,
      'certificates',
      () => certificatesDueForExpiryWarning(ctx.db, window, CHUNK),
      openVpnConfiguration,
    ));
  if (announced > 0)
    ctx.logger.info(
      { announced },
      `announced ${announced} configuration(s) expiring within ${ctx.config.expiryWarning}`,
    );
  return announced;
}

/** One table's due warnings, a batch per transaction, each claimed before it is announced. */
async function announceDue<T extends { readonly expiresAt: string }>(
  ctx: PortalContext,
  now: Date,
  table: ConfigurationTable,
  due: () => Promise<T[]>,
  configurationOf: (row: T) => ConfigurationRef,
): Promise<number> {
  let announced = 0;
  for (;;) {
    const batch = await due();
    if (batch.length === 0) return announced;
    announced += await ctx.events.change(ctx.db, async (trx, announce) => {
      let count = 0;
      for (const row of batch) {
        const configuration = configurationOf(row);
        if (!(await markExpiryWarned(trx, table, configuration.connectionId))) continue;
        await announce({ type: 'configuration.expiring', at: now, configuration, expiresAt: new Date(row.expiresAt) });
        count++;
      }
      return count;
    });
  }
}

/** When the next `configuration.expiring` is due (maybe already), or null when none is to come. */
export async function nextExpiryWarningAt(ctx: PortalContext): Promise<Date | null> {
  const [peer, certificate] = await Promise.all([
    earliestUnwarnedExpiry(ctx.db, 'wg_peers'),
    earliestUnwarnedExpiry(ctx.db, 'certificates'),
  ]);
  const earliest = [peer, certificate].filter((value): value is string => value !== null).sort()[0];
  return earliest === undefined ? null : subtractDuration(new Date(earliest), ctx.config.expiryWarning);
}
