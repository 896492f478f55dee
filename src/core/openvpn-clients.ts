// Ending OpenVPN connections on their nodes, best effort: a node that cannot be reached is
// logged by the fleet, and the next reconcile disconnects whatever should not be connected;
// meanwhile the node's /connect check refuses a reconnect.
import type { OpenVpnCertificate } from '../storage/certificates.js';
import type { PortalContext } from './context.js';
import { forEachLimited } from './limited-parallel.js';

const PUSH_PARALLELISM = 16;

export async function disconnectOpenVpnClients(ctx: PortalContext, certificates: readonly OpenVpnCertificate[]): Promise<void> {
  await forEachLimited(certificates, PUSH_PARALLELISM, async (certificate) => {
    await ctx.nodes.tryOn(certificate.nodeNumber, 'disconnect_client', (daemon) => daemon.disconnectClient(certificate.commonName));
  });
}
