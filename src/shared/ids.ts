// Branded identifiers: a UserId cannot be passed where a ProfileId is expected.
// Values only become branded after validation (see src/protocol/admin-api-params.ts and src/config/schema.ts).

declare const brand: unique symbol;
type Brand<T, B extends string> = T & { readonly [brand]: B };

export type UserId = Brand<string, 'UserId'>;
export type ProfileId = Brand<string, 'ProfileId'>;
/** WireGuard: the client's public key. OpenVPN: the certificate Common Name. */
export type ConnectionId = Brand<string, 'ConnectionId'>;
/** Non-negative integer naming a VPN node (reference §1.3). */
export type NodeNumber = Brand<number, 'NodeNumber'>;
/** Base64 (standard, padded) encoding of a 32-byte X25519 key. */
export type WireGuardKey = Brand<string, 'WireGuardKey'>;
/** A device the portal registered: `dev_` and 24 hex digits, the first 12 its registration time (so ids sort by age). */
export type DeviceId = Brand<string, 'DeviceId'>;

export type VpnProto = 'wireguard' | 'openvpn';

export const asUserId = (value: string): UserId => value as UserId;
export const asProfileId = (value: string): ProfileId => value as ProfileId;
export const asConnectionId = (value: string): ConnectionId => value as ConnectionId;
export const asNodeNumber = (value: number): NodeNumber => value as NodeNumber;
/** The highest node number: a node names itself in `X-Node-Number` with at most six digits. */
export const MAX_NODE_NUMBER = 999_999;
/** A revocation receipt's id (a UUIDv7). */
export type RevocationId = Brand<string, 'RevocationId'>;
export const asRevocationId = (value: string): RevocationId => value as RevocationId;
export const asWireGuardKey = (value: string): WireGuardKey => value as WireGuardKey;
export const asDeviceId = (value: string): DeviceId => value as DeviceId;
