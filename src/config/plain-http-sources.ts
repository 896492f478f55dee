// The MDM's inventory and the revocation lists decide which devices are retired. Read over
// plain http://, anyone on the path can answer in their place: an inventory without a device
// retires it; a revocation list is signed and verified, so it cannot be forged, but an older
// one can be replayed and keep a revoked device in until that list's nextUpdate. This says so
// at start, naming the option, without refusing a set-up that may sit on a closed network.
import type { PortalConfig } from './portal-config.js';

/** One sentence per plain-http source of device decisions; empty when every one is https or a file. */
export function plainHttpSourceWarnings(config: PortalConfig): string[] {
  const sources: { readonly option: string; readonly url: string; readonly risk: string }[] = [];
  const inventoryRisk = 'anyone on the network path can answer in its place and retire devices';
  const inventory = config.mdmInventory?.source;
  if (inventory !== undefined) {
    if (inventory.provider === 'intune') {
      sources.push({ option: 'mdmInventory.tokenUrl', url: inventory.tokenUrl, risk: inventoryRisk });
      sources.push({ option: 'mdmInventory.graphUrl', url: inventory.graphUrl, risk: inventoryRisk });
    } else {
      sources.push({ option: 'mdmInventory.url', url: inventory.url, risk: inventoryRisk });
    }
  }
  for (const [index, source] of (config.enrollment.clientCertificate?.crlSources ?? []).entries()) {
    if (source.kind === 'url')
      sources.push({
        option: `enrollment.clientCertificate.crl[${index}]`,
        url: source.location,
        risk: 'anyone on the network path can replay an older list and keep a revoked device in until its nextUpdate',
      });
  }
  return sources
    .filter(({ url }) => /^http:\/\//i.test(url))
    .map(
      ({ option, url, risk }) =>
        `${option} is read over plain http (${url}): ${risk}. Use https if the server offers it.`,
    );
}
