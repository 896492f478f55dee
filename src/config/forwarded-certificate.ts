// Certificate enrollment without the portal's own mutual-TLS listener depends on a proxy that
// forwards the certificate, and such a proxy is believed only when it is named in
// enrollment.clientCertificate.trustedProxyList (being in adminApi.trustedProxyList, as once,
// no longer counts). A configuration that leaves that list empty enrolls no device by its
// certificate; this says so at start instead of leaving every device to a 403.
import type { PortalConfig } from './portal-config.js';

/** A sentence when no device can enroll by its certificate although enrollment.clientCertificate is set; else null. */
export function forwardedCertificateWarning(config: PortalConfig): string | null {
  const { clientCertificate, tls } = config.enrollment;
  if (clientCertificate === null || tls !== null || clientCertificate.trustedProxyList.length > 0) return null;
  const formerly =
    config.adminApi.trustedProxyList.length > 0
      ? ' A proxy in adminApi.trustedProxyList no longer counts for this.'
      : '';
  return (
    'enrollment.clientCertificate is set without enrollment.tls, so a device certificate can only come from a reverse proxy, ' +
    `but enrollment.clientCertificate.trustedProxyList is empty: no forwarded certificate is believed and no device enrolls by its certificate.${formerly} ` +
    `List the proxy that verifies the certificate there, and have it send ${clientCertificate.header} and ${clientCertificate.verifiedHeader} (examples/nginx/vpn-portal-mtls.conf).`
  );
}
