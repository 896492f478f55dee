// `webhooks`: which private addresses a receiver may have, how long a delivery waits for an
// answer, and how long it is retried and logged, bounded so a receiver down overnight still
// gets everything.
import { durationMilliseconds, type IsoDuration } from '../shared/iso-duration.js';
import { boundedMilliseconds, mustParseDuration, type Report } from './option-checks.js';
import type { PortalConfig } from './portal-config.js';
import type { ParsedPortalConfig } from './schema.js';

/** A receiver that needs more than a minute to say "received" holds a delivery slot for too long. */
const WEBHOOK_TIMEOUT_BOUNDS = { minMs: 1_000, maxMs: 60_000, text: 'between PT1S and PT1M' } as const;

export function resolveWebhooks(raw: ParsedPortalConfig['webhooks'], report: Report): PortalConfig['webhooks'] {
  return {
    allowPrivateTargets: raw.allowPrivateTargets,
    timeoutMs: boundedMilliseconds(raw.timeout, 'webhooks.timeout', WEBHOOK_TIMEOUT_BOUNDS, report),
    retryFor: atLeastOneDay(raw.retryFor, 'webhooks.retryFor', report),
    deliveryLogRetention: atLeastOneDay(raw.deliveryLogRetention, 'webhooks.deliveryLogRetention', report),
  };
}

/** Webhooks are retried for at least a day (a receiver down overnight still gets everything), and logged as long. */
function atLeastOneDay(text: string, option: string, report: Report): IsoDuration {
  const duration = mustParseDuration(text);
  if (durationMilliseconds(duration) < 86_400_000) report(option, `"${text}" must be at least P1D`);
  return duration;
}
