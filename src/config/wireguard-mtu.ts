// The MTU `WireGuard.setMtu` may set, apart from the schema so that the eduVPN converter can bring
// an eduVPN value into it without loading the schema.

/**
 * At least IPv6's minimum link MTU (below it Linux takes the IPv6 addresses off the interface,
 * and every WireGuard profile has an IPv6 range), at most a jumbo frame.
 */
export const WIREGUARD_MTU = { min: 1280, max: 9000 } as const;
