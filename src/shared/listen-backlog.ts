// One listen backlog for every server we run: a flood of connections (a reconnect storm, slow
// clients being cut off) must not overflow Node's default queue of 511, or the kernel drops
// SYNs and honest clients wait a second for their retransmission.

/** Connections the kernel queues before they are accepted (capped by net.core.somaxconn). */
export const LISTEN_BACKLOG = 4096;
