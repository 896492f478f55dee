// Node API authentication: `X-Node-Number` and that node's secret as a Bearer token
// (reference §1.2), compared in constant time. A number that is no configured node is
// refused the same way before the key store is asked, so unknown numbers cost no file read.
// Six digits at most: the configuration takes no node number above MAX_NODE_NUMBER.
import type { FastifyRequest } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import { asNodeNumber, type NodeNumber } from '../../shared/ids.js';
import { HttpError } from '../plumbing/http-error.js';

export function authenticatedNode(ctx: PortalContext, request: FastifyRequest): NodeNumber {
  const header = request.headers['x-node-number'];
  const authorization = request.headers.authorization;
  if (typeof header !== 'string' || !/^(0|[1-9]\d{0,5})$/.test(header))
    throw new HttpError(400, 'missing or invalid "X-Node-Number" header');
  const nodeNumber = asNodeNumber(Number(header));
  const token = typeof authorization === 'string' && authorization.startsWith('Bearer ') ? authorization.slice(7) : '';
  if (!ctx.config.nodes.has(nodeNumber) || !ctx.keys.nodeKeyMatches(nodeNumber, token)) {
    request.log.warn({ nodeNumber, ip: request.ip }, 'node API: authentication failed');
    throw new HttpError(401, 'authentication required', { 'www-authenticate': 'Bearer realm="Node API"' });
  }
  return nodeNumber;
}
