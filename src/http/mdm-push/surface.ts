// `POST {baseUrl}mdm/jamf`, where Jamf Pro delivers its webhooks (`mdmPush.jamf`; not served
// when it is null). Its guard runs before the body is read: the source address against
// `mdmPush.jamf.allowList` (403), then the credential Jamf Pro sends — Basic authentication or a
// header of the administrator's choosing, compared in constant time with the secrets read at
// start — (401, with an audit row and a warning, and nothing changed). The body is JSON (Jamf
// Pro's webhook content type `JSON`), at most 1 MiB: a smart group change names every device
// that joined or left. Events are acted on by src/core/devices/jamf-push.ts; every well-formed
// event is answered 200, unknown devices and event types included, so that Jamf Pro does not
// send it again (503 only when devices named by Jamf id could not be looked up in Jamf Pro).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { JamfPushConfig } from '../../config/portal-config.js';
import { recordAdminCall } from '../../core/access/index.js';
import { unauthenticatedCaller } from '../../core/admin-call.js';
import type { PortalContext } from '../../core/context.js';
import { applyJamfEvent, type JamfPushCounts } from '../../core/devices/index.js';
import { JamfWebhookError, parseJamfWebhook, type JamfEvent } from '../../protocol/jamf-webhook.js';
import { constantTimeMatcher } from '../../shared/constant-time.js';
import { AddressAllowList } from '../../net/address-allow-list.js';
import { sendError } from '../plumbing/error-reply.js';
import { HttpError } from '../plumbing/http-error.js';
import { addJsonBodyParser } from '../plumbing/json-body.js';
import { requestsUnder, type HttpSurface } from '../plumbing/surface.js';

/** The path below baseUrl. */
export const JAMF_PUSH_PATH = 'mdm/jamf';
/** A smart group change of a few thousand devices fits. */
const JAMF_BODY_LIMIT_BYTES = 1024 * 1024;
const CALL_NAME = 'jamf webhook';

export function jamfPushSurface(ctx: PortalContext, config: JamfPushConfig, counts: JamfPushCounts): HttpSurface {
  const path = `${ctx.config.basePath}/${JAMF_PUSH_PATH}`;
  const allowList = new AddressAllowList(config.allowList);
  const authenticates = credentialCheck(config);
  return {
    owns: requestsUnder(path),
    async guard(request, reply) {
      const refuse = async (status: 401 | 403, detail: string, told: string): Promise<void> => {
        request.log.warn({ ip: request.ip, detail }, 'Jamf Pro webhook refused');
        const call = { caller: unauthenticatedCaller(request.ip), name: CALL_NAME, parameters: {}, successStatus: 200 };
        await recordAdminCall(ctx, call, status, detail).catch((error: unknown) =>
          request.log.error({ err: error }, 'could not record a refused Jamf Pro webhook in the audit log'),
        );
        await sendError(
          reply,
          status,
          told,
          status === 401 ? { 'www-authenticate': 'Basic realm="Jamf Pro webhook"' } : {},
        );
      };
      if (!allowList.allows(request.ip)) {
        const detail = `source address ${request.ip} not in mdmPush.jamf.allowList`;
        await refuse(403, detail, 'source address not allowed');
        return;
      }
      const failure = authenticates(request);
      if (failure !== null)
        await refuse(401, failure, 'authentication required: the credential configured in Jamf Pro');
    },
    async plugin(app) {
      addJsonBodyParser(app, ['application/json'], (message) => new HttpError(400, message), {
        bodyLimit: JAMF_BODY_LIMIT_BYTES,
      });
      // Anything else (Jamf Pro's XML content type) is refused with what to change.
      app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: JAMF_BODY_LIMIT_BYTES }, (_request, _body, done) =>
        done(
          new HttpError(415, "send application/json: set the webhook's content type to JSON in Jamf Pro"),
          undefined,
        ),
      );
      app.post(path, { bodyLimit: JAMF_BODY_LIMIT_BYTES }, (request, reply) =>
        receive(ctx, config, counts, request, reply),
      );
    },
    methods: new Map([[path, 'POST']]),
  };
}

async function receive(
  ctx: PortalContext,
  config: JamfPushConfig,
  counts: JamfPushCounts,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  let event: JamfEvent;
  try {
    event = parseJamfWebhook(request.body);
  } catch (error) {
    if (error instanceof JamfWebhookError) {
      request.log.warn(
        { ip: request.ip, problem: error.message },
        'Jamf Pro webhook with a body the portal cannot read',
      );
      await sendError(reply, 400, error.message);
      return;
    }
    throw error;
  }
  const outcome = await applyJamfEvent(ctx, config, event, counts);
  await reply.code(200).send({ event: event.webhookEvent, ...outcome });
}

/**
 * The check of a request's credential against those configured: null when one matches, else
 * why not (for the log and the audit row; the secrets themselves never appear).
 */
function credentialCheck(config: JamfPushConfig): (request: FastifyRequest) => string | null {
  const basic = config.basicAuth;
  const header = config.headerAuth;
  const usernameMatches = basic === null ? null : constantTimeMatcher(basic.username);
  const passwordMatches = basic === null ? null : constantTimeMatcher(basic.password.reveal());
  const headerMatches = header === null ? null : constantTimeMatcher(header.value.reveal());
  return (request) => {
    if (header !== null && headerMatches !== null) {
      const value = request.headers[header.name];
      if (typeof value === 'string' && headerMatches(value)) return null;
    }
    const authorization = request.headers.authorization;
    if (usernameMatches !== null && passwordMatches !== null && typeof authorization === 'string') {
      const [scheme, encoded] = authorization.split(' ', 2);
      if (scheme?.toLowerCase() === 'basic' && encoded !== undefined) {
        const decoded = Buffer.from(encoded, 'base64').toString('utf8');
        const colon = decoded.indexOf(':');
        // Both halves are always compared, so the time taken does not tell which one was wrong.
        const userRight = usernameMatches(colon < 0 ? decoded : decoded.slice(0, colon));
        const passwordRight = passwordMatches(colon < 0 ? '' : decoded.slice(colon + 1));
        if (userRight && passwordRight) return null;
        return 'wrong Basic credentials';
      }
    }
    if (header !== null && request.headers[header.name] !== undefined) return `wrong ${header.name} header`;
    return 'no credential';
  };
}
