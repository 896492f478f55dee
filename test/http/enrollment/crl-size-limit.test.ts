// A revocation list at a URL that answers far more than the 20 MiB limit (chunked, no
// Content-Length) is refused after about 20 MiB: the portal hangs up instead of reading it all,
// keeps its last good list and says why in the metrics.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { capturedLog } from '../../support/captured-log.js';
import { MdmCa } from '../../support/mdm-ca.js';
import { startEndlessBody } from '../../support/endless-body.js';
import { startTestPortal } from '../../support/test-portal.js';

const MIB = 1024 * 1024;

test('a revocation list larger than 20 MiB is refused after reading about 20 MiB, naming the limit', async (t) => {
  const ca = MdmCa.make();
  t.after(() => ca.remove());
  const endless = await startEndlessBody(200 * MIB, 'application/pkix-crl');
  t.after(() => endless.close());
  const log = capturedLog('error');
  const portal = await startTestPortal({
    logger: log.logger,
    config: { enrollment: ca.mutualTlsEnrollment({ crl: [`${endless.url}/issuing.crl`], crlRefresh: 'PT1H' }) },
  });
  t.after(() => portal.close());
  const sent = await endless.closed();
  assert.ok(sent < 20 * MIB + 16 * MIB, `the list's server wrote ${sent} bytes before the portal hung up`);
  const end = Date.now() + 10_000;
  let metrics = '';
  while (!/vpn_portal_crl_read_failing\{[^}]*\} 1/.test(metrics) && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    metrics = await (await fetch(portal.portal.metricsUrl ?? '')).text();
  }
  assert.match(metrics, /vpn_portal_crl_read_failing\{[^}]*\} 1/);
  assert.match(log.text(), /answered more than 20971520 bytes \(20 MiB, the limit\)/);
});
