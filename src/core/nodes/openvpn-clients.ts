// Ending OpenVPN connections on their nodes right after the database changed. A node that
// cannot be reached is retried by the fleet and reconciled as soon as it answers (the
// reconcile disconnects whatever should not be connected); meanwhile the node's /connect
// check refuses a reconnect. A disconnect that could not be pushed is said at warn level.
import type { OpenVpnCertificate } from '../../storage/certificates.js';
import type { PortalContext } from '../context.js';
import { pushToNodes } from './push.js';

/** Answers the configurations whose clients the nodes disconnected (or had none of), for the revocation receipt. */
export async function disconnectOpenVpnClients(
  ctx: PortalContext,
  certificates: readonly OpenVpnCertificate[],
  why: string,
): Promise<readonly OpenVpnCertificate[]> {
  const { missed, done } = await pushToNodes(
    ctx,
    certificates,
    'disconnect_client',
    'glance',
    (certificate) => certificate.nodeNumber,
    (daemon, certificate) => daemon.disconnectClient(certificate.commonName),
  );
  for (const [nodeNumber, count] of missed) {
    ctx.logger.warn(
      { nodeNumber, clients: count, call: why },
      `${why}: node ${nodeNumber} was not told to disconnect ${count} OpenVPN configuration(s); it is reconciled as soon as it answers again`,
    );
  }
  return done.map(({ item }) => item);
}
