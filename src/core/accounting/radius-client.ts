// One transmission of an Accounting-Request over UDP: sent from a socket of its own (so its
// Identifier cannot meet another request's), answered by the first Accounting-Response from the
// server's address and port that passes the check with the request's authenticator and the
// shared secret. Responses that fail the check are ignored, as RFC 2866 says; no answer within
// the timeout is a missed attempt, retransmitted later by the worker.
import { createSocket } from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { randomInt } from 'node:crypto';
import type { RadiusServer } from '../../config/portal-config.js';
import { canonicalAddressOrSame } from '../../net/cidr.js';
import { checkAccountingResponse, encodeAccountingRequest, type AccountingRecord } from '../../protocol/radius.js';
import { messageOf } from '../../shared/error-message.js';

export type TransmissionOutcome =
  | { readonly kind: 'answered' }
  | { readonly kind: 'unanswered'; readonly reason: string };

export async function transmitAccountingRequest(
  server: RadiusServer,
  record: AccountingRecord,
  delaySeconds: number,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<TransmissionOutcome> {
  let address: { address: string; family: number };
  try {
    address = await lookup(server.host);
  } catch (error) {
    return { kind: 'unanswered', reason: `cannot resolve ${server.host}: ${messageOf(error)}` };
  }
  const secret = Buffer.from(server.secret.reveal(), 'utf8');
  const request = encodeAccountingRequest(record, { identifier: randomInt(256), secret, delaySeconds });
  const socket = createSocket(address.family === 6 ? 'udp6' : 'udp4');
  // An address as written in the configuration (`[2001:DB8:0::1]:1813`) comes back from the lookup
  // as written, while the socket names the response's sender in canonical form (`2001:db8::1`).
  const sentTo = canonicalAddressOrSame(address.address);
  let invalid: string | null = null;
  try {
    return await new Promise<TransmissionOutcome>((resolve) => {
      const finish = (outcome: TransmissionOutcome): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', aborted);
        resolve(outcome);
      };
      const aborted = (): void => finish({ kind: 'unanswered', reason: 'the portal is stopping' });
      const timer = setTimeout(
        () => finish({ kind: 'unanswered', reason: invalid ?? `no Accounting-Response within ${timeoutMs} ms` }),
        timeoutMs,
      );
      signal.addEventListener('abort', aborted);
      socket.on('error', (error) => finish({ kind: 'unanswered', reason: messageOf(error) }));
      socket.on('message', (packet, from) => {
        if (canonicalAddressOrSame(from.address) !== sentTo || from.port !== server.port) return;
        const check = checkAccountingResponse(packet, request, secret);
        if (check.kind === 'accepted') finish({ kind: 'answered' });
        else if (check.kind === 'invalid') invalid = `a response that fails its check: ${check.reason}`;
      });
      socket.send(request.packet, server.port, address.address, (error) => {
        if (error) finish({ kind: 'unanswered', reason: messageOf(error) });
      });
    });
  } finally {
    socket.close();
  }
}
