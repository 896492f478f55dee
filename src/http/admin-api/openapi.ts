// The OpenAPI 3.1 description of the Admin API, built from the same route definitions, parameter
// schemas and answer schemas (ADMIN_API_CALLS) that the portal runs, so the document cannot drift from the code.
import { z } from 'zod';
import {
  ADMIN_SCOPES,
  CONFIGURATION_FILE,
  CONFIGURATION_MEDIA_TYPES,
  IDEMPOTENCY_KEY_HEADER,
  NO_BODY,
  errorAnswer,
  scopeAllows,
  successStatusOf,
} from '../../protocol/admin-api.js';
import type { AdminRoute } from './admin-route.js';
import { handOutGoneDoc } from './hand-outs.js';
import { paramFields, type ParamField } from '../../protocol/admin-api-params.js';

export function buildOpenApiDocument(routes: readonly AdminRoute[], serverUrl: string): Record<string, unknown> {
  const paths = Object.fromEntries(
    routes.map((route) => [route.path, { [route.method.toLowerCase()]: operationOf(route) }]),
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'VPN portal Admin API',
      version: 'v1',
      description:
        'Administrator API compatible with the eduVPN / Let\'s Connect! portal. Errors are JSON {"error": "..."}. ' +
        'Extensions of this portal: admin keys (`vpa_…`, made with `vpn-portal admin-key create`) with a scope (`x-required-scope` of each call), ' +
        'optional profile limits and address allow-lists; the audit log (`/audit_log`); signed webhooks (`/create_webhook`, `/webhook_deliveries`, …); ' +
        'and `Idempotency-Key` on every POST.',
    },
    servers: [{ url: serverUrl }],
    'x-admin-key-scopes': Object.fromEntries(
      ADMIN_SCOPES.map((scope) => [
        scope,
        routes.filter((route) => scopeAllows(scope, route.scope)).map((route) => route.path.slice(1)),
      ]),
    ),
    components: {
      securitySchemes: {
        adminApiKey: {
          type: 'http',
          scheme: 'bearer',
          description:
            "The specification's secret (DATA/keys/admin-api.key, every scope) or an admin key (`vpa_…`) of scope read, write or admin",
        },
      },
    },
    security: [{ adminApiKey: [] }],
    paths,
  };
}

/** One call as an OpenAPI operation: who may make it, what it answers, and what it takes. */
function operationOf(route: AdminRoute): Record<string, unknown> {
  return {
    operationId: route.path.slice(1),
    summary: route.summary,
    description:
      `${route.since === 'extension' ? "An extension of this portal: not part of eduVPN's Admin API v1." : `Since portal version ${route.since}.`} ` +
      `Needs an admin key of scope \`${route.scope}\`${route.needsEveryProfile === true ? ' not limited to some profiles' : ''} ` +
      "(the specification's secret has every scope).",
    ...(route.since === 'extension' ? { 'x-extension': true } : {}),
    // OpenAPI 3.1: for a bearer scheme the list names the roles the call needs.
    security: [{ adminApiKey: [route.scope] }],
    'x-required-scope': route.scope,
    responses: responsesOf(route),
    ...inputOf(route),
  };
}

function responsesOf(route: AdminRoute): Record<string, unknown> {
  return {
    [String(successStatusOf(route.answer))]: describeAnswer(route),
    '400': jsonResponse('Invalid or missing parameter, or unknown user'),
    '401': jsonResponse('Missing, wrong, expired, revoked or rotated-out key'),
    '403': jsonResponse(
      "Refused, the error names what is missing: the source address (adminApi.allowList or the key's own allow-list), the key's scope, or its profiles; or the user is disabled",
    ),
    '503': jsonResponse('Admin API disabled, or a needed resource is unavailable'),
    ...(route.method === 'POST'
      ? {
          '409': jsonResponse('A request with this Idempotency-Key is still being processed'),
          '422': jsonResponse('This Idempotency-Key was used with other parameters (or another call) within 24 hours'),
        }
      : {}),
    ...(route.path === '/enable_user'
      ? {
          '409': jsonResponse(
            'A request with this Idempotency-Key is still being processed, or the directory (SCIM) calls the user inactive: it stays disabled until the directory calls the person active',
          ),
        }
      : {}),
    ...(route.path === '/create'
      ? {
          '404': jsonResponse('No such profile'),
          '406': jsonResponse('No configuration format in common between the Accept header and the profile'),
        }
      : {}),
    ...(route.path === '/attribution'
      ? {
          '404': jsonResponse(
            "No session of the key's profiles held the address then, no node used the public address, or the port is outside every client's block",
          ),
          '409': jsonResponse(
            "Not traceable to one user, and no one is named: the node masqueraded, two nodes' mappings had the public address, the client address passed from one user to another within the second asked about, or the node's mapping changed within that second and the port was another user's under each (the error names the candidates)",
          ),
        }
      : {}),
    ...(route.handsOut === undefined ? {} : { '410': jsonResponse(handOutGoneDoc(route.handsOut.kind)) }),
  };
}

/** The call's parameters: in the query string, or a form body (a POST also takes Idempotency-Key). */
function inputOf(route: AdminRoute): Record<string, unknown> {
  const fields = paramFields(route.params);
  if (route.source === 'query') {
    return {
      parameters: fields.map((spec) => ({
        name: spec.name,
        in: 'query',
        required: spec.required,
        description: spec.description,
        schema: schemaOf(spec),
      })),
    };
  }
  return {
    ...(route.method === 'POST'
      ? {
          parameters: [
            {
              name: IDEMPOTENCY_KEY_HEADER,
              in: 'header',
              required: false,
              description:
                'Makes a retry safe: the same key (per admin key and the keys rotated from it) with the same parameters within 24 hours gets the first answer again, and changes nothing',
              schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
            },
          ],
        }
      : {}),
    requestBody: {
      required: fields.some((spec) => spec.required),
      content: {
        'application/x-www-form-urlencoded': {
          schema: {
            type: 'object',
            properties: Object.fromEntries(
              fields.map((spec) => [spec.name, { ...schemaOf(spec), description: spec.description }]),
            ),
            required: fields.filter((spec) => spec.required).map((spec) => spec.name),
          },
        },
      },
    },
  };
}

/** The JSON schema of a parameter's type; its description is the parameter's, given beside it. */
function schemaOf(spec: ParamField): Record<string, unknown> {
  const {
    $schema: _ignored,
    description: _described,
    ...schema
  } = z.toJSONSchema(spec.schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return schema;
}

/** The success answer: the call's JSON schema, the media types of a configuration file, or no body. */
function describeAnswer({ answer, answerDoc }: AdminRoute): Record<string, unknown> {
  if (answer === NO_BODY) return { description: answerDoc };
  if (answer === CONFIGURATION_FILE) {
    return {
      description: answerDoc,
      content: Object.fromEntries(
        Object.values(CONFIGURATION_MEDIA_TYPES).map((type) => [type, { schema: { type: 'string' } }]),
      ),
    };
  }
  return { description: answerDoc, content: { 'application/json': { schema: jsonSchema(answer) } } };
}

function jsonResponse(description: string): Record<string, unknown> {
  return { description, content: { 'application/json': { schema: jsonSchema(errorAnswer) } } };
}

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest;
}
