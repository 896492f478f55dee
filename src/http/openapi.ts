// The OpenAPI 3.1 description of the Admin API, built from the same route definitions and
// parameter schemas that validate requests, so the document cannot drift from the code.
import { z } from 'zod';
import type { AdminRoute } from './admin-route.js';
import type { ParamShape, ParamSpec } from './params.js';

const errorSchema = z.object({ error: z.string() });

export function buildOpenApiDocument(routes: readonly AdminRoute<ParamShape>[], serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const operation: Record<string, unknown> = {
      operationId: route.path.slice(1),
      summary: route.summary,
      description: route.since === 'extension' ? "An extension of this portal: not part of eduVPN's Admin API v1." : `Since portal version ${route.since}.`,
      ...(route.since === 'extension' ? { 'x-extension': true } : {}),
      responses: {
        [String(route.success.status)]: describeResponse(route.success.doc),
        '400': jsonResponse('Invalid or missing parameter, or unknown user'),
        '401': jsonResponse('Missing or wrong Bearer token'),
        '403': jsonResponse('Source address not allowed, or the user is disabled'),
        '503': jsonResponse('Admin API disabled, or a needed resource is unavailable'),
      },
    };
    if (route.path === '/create') {
      Object.assign(operation.responses as object, {
        '404': jsonResponse('No such profile'),
        '406': jsonResponse('No configuration format in common between the Accept header and the profile'),
      });
    }
    const fields = Object.entries(route.params);
    if (route.source === 'query') {
      operation['parameters'] = fields.map(([name, spec]) => ({
        name,
        in: 'query',
        required: spec.required,
        description: spec.description,
        schema: schemaOf(spec),
      }));
    } else {
      operation['requestBody'] = {
        required: fields.some(([, spec]) => spec.required),
        content: {
          'application/x-www-form-urlencoded': {
            schema: {
              type: 'object',
              properties: Object.fromEntries(fields.map(([name, spec]) => [name, { ...schemaOf(spec), description: spec.description }])),
              required: fields.filter(([, spec]) => spec.required).map(([name]) => name),
            },
          },
        },
      };
    }
    paths[route.path] = { [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'VPN portal Admin API',
      version: 'v1',
      description: 'Administrator API compatible with the eduVPN / Let\'s Connect! portal. Errors are JSON {"error": "..."}.',
    },
    servers: [{ url: serverUrl }],
    components: { securitySchemes: { adminApiKey: { type: 'http', scheme: 'bearer' } } },
    security: [{ adminApiKey: [] }],
    paths,
  };
}

function schemaOf(spec: ParamSpec<unknown>): Record<string, unknown> {
  const { $schema: _ignored, ...schema } = z.toJSONSchema(spec.schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return schema;
}

function describeResponse(doc: { description: string; schema?: z.ZodType; contentTypes?: readonly string[] }): Record<string, unknown> {
  if (doc.schema !== undefined) return { description: doc.description, content: { 'application/json': { schema: jsonSchema(doc.schema) } } };
  if (doc.contentTypes !== undefined) {
    return { description: doc.description, content: Object.fromEntries(doc.contentTypes.map((type) => [type, { schema: { type: 'string' } }])) };
  }
  return { description: doc.description };
}

function jsonResponse(description: string): Record<string, unknown> {
  return { description, content: { 'application/json': { schema: jsonSchema(errorSchema) } } };
}

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}
