// The reference's rule for DNS servers: a client gets a profile's `dnsServerList` only when all
// its traffic goes through the tunnel (`defaultGateway`) or when search domains make the
// resolver relevant (src/wireguard/client-config.ts, src/openvpn/server-config.ts). A
// split-tunnel profile with servers but no search domains therefore drops them without a word;
// this names such profiles so the portal can say so at start.
import type { Profile } from './portal-config.js';

/** One sentence per profile whose DNS servers no client receives. */
export function droppedDnsServerWarnings(profiles: readonly Profile[]): string[] {
  return profiles
    .filter(
      (profile) =>
        !profile.defaultGateway && profile.dnsServerList.length > 0 && profile.dnsSearchDomainList.length === 0,
    )
    .map(
      (profile) =>
        `profile "${profile.profileId}": its dnsServerList is not sent to clients, because it is a split tunnel (defaultGateway false) without dnsSearchDomainList: ` +
        "DNS servers go to clients only with defaultGateway or search domains (the reference portal's rule); add dnsSearchDomainList, or remove dnsServerList",
    );
}
