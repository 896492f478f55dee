// POST /create (specification §4.6): the configuration file in the format the Accept header chooses.
import { createConfiguration, type IssuedConfiguration } from '../../../../core/issuing/index.js';
import { formatHttpDate } from '../../../../shared/time.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { defineRoute, type RouteResponse } from '../../admin-route.js';
import { deviceRequest } from '../devices/devices.js';

export const createRoute = defineRoute({
  ...ADMIN_API_CALLS.create,
  summary: 'Create a configuration for a user and profile (the user is created when missing)',
  since: '3.0.6',
  source: 'post',
  // Another Accept is another file: a retry with the same Idempotency-Key must send the same.
  varyHeaders: ['accept'],
  // Named by the use case as it keeps the answer, in the change that stores the configuration.
  handsOut: { kind: 'configuration' },
  answerDoc:
    'The configuration file, in the format chosen by the Accept header; the Apple profile comes with `Content-Disposition: attachment`',
  async handle(ctx, params, request, { keepAnswer }) {
    const issued = await createConfiguration(ctx, {
      userId: params.user_id,
      profileId: params.profile_id,
      displayName: params.display_name ?? 'Admin API',
      preferTcp: params.prefer_tcp ?? false,
      expiresIn: params.expires_in,
      accept: request.headers.accept,
      ...(params.public_key === undefined ? {} : { publicKey: params.public_key }),
      ...(params.csr === undefined ? {} : { csr: params.csr }),
      ...deviceRequest(params),
      ...(params.on_demand === undefined ? {} : { onDemand: params.on_demand }),
      // With an Idempotency-Key, the answer is kept in the transaction that stores the configuration.
      ...(keepAnswer === undefined
        ? {}
        : {
            keepAnswer: (trx, answer, connectionId) =>
              keepAnswer(trx, configurationAnswer(answer), { kind: 'configuration', id: connectionId }),
          }),
    });
    return configurationAnswer(issued);
  },
});

/** The configuration file with the headers create (and enroll) answer it with. */
export function configurationAnswer(issued: IssuedConfiguration): Extract<RouteResponse, { readonly body: unknown }> {
  return {
    status: 200,
    body: typeof issued.body === 'string' ? issued.body : Buffer.from(issued.body),
    headers: {
      'content-type': issued.contentType,
      expires: formatHttpDate(issued.expiresAt),
      // The name is already restricted to [A-Za-z0-9._-], so it needs no quoting rules.
      ...(issued.downloadFileName === null
        ? {}
        : { 'content-disposition': `attachment; filename="${issued.downloadFileName}"` }),
    },
  };
}
