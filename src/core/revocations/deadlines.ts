// The clock of the revocation receipts: once a second each portal instance looks for receipts
// pending past `revocationDeadline` (and for receipts whose nodes all confirmed while no
// instance could tell, see checkRevocationDeadlines). The moves are claimed by conditional
// updates, so however many instances look, each `revocation.overdue` is announced once. Apart
// from the reconcile scheduler: a long pass must not delay the alarm.
import { storageOutage } from '../../storage/errors.js';
import type { PortalContext } from '../context.js';
import { checkRevocationDeadlines } from './receipts.js';

const CHECK_EVERY_MS = 1_000;

export class RevocationDeadlines {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private checking = false;

  constructor(private readonly ctx: PortalContext) {}

  start(): void {
    this.timer = setInterval(() => this.check(), CHECK_EVERY_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  private check(): void {
    if (this.checking) return;
    this.checking = true;
    this.running = checkRevocationDeadlines(this.ctx)
      .then(() => undefined)
      .catch((error: unknown) => {
        const outage = storageOutage(error);
        if (outage === null) this.ctx.logger.error({ err: error }, 'revocation deadline check failed');
        else this.ctx.logger.warn({ err: error, outage }, `revocation deadline check failed: database ${outage}`);
      })
      .finally(() => {
        this.checking = false;
      });
  }
}
