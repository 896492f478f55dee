// Reading the JSON Schema documents zod writes (z.toJSONSchema): the few shapes our schemas
// use, named as a reader of the docs says them ("integer 1–65535", "ISO 8601 duration").

export interface JsonSchema {
  readonly type?: string | readonly string[];
  readonly format?: string;
  readonly enum?: readonly unknown[];
  readonly const?: unknown;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  readonly anyOf?: readonly JsonSchema[];
  readonly oneOf?: readonly JsonSchema[];
  readonly items?: JsonSchema;
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | JsonSchema;
  readonly default?: unknown;
  readonly description?: string;
  /** Ours, through zod's `.meta()`: a default the program computes, said in words. */
  readonly defaultText?: string;
  /** Ours, through zod's `.meta()`: the docs page (relative to docs/) that tells more. */
  readonly see?: string;
}

const FORMATS: Readonly<Record<string, string>> = {
  'iso-8601-duration': 'ISO 8601 duration',
  'ip-prefix': 'IP prefix',
  uri: 'URL',
  'date-time': 'date-time',
};

/** Integer bounds that only say "any safe integer" are no information. */
const saysNothing = (value: number | undefined): boolean =>
  value === undefined || Math.abs(value) >= Number.MAX_SAFE_INTEGER;

export function typeText(schema: JsonSchema): string {
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives !== undefined) {
    const nullable = alternatives.some((entry) => entry.type === 'null');
    const rest = alternatives.filter((entry) => entry.type !== 'null');
    const [single, list] = rest;
    let text: string;
    if (
      rest.length === 2 &&
      single !== undefined &&
      list?.type === 'array' &&
      JSON.stringify(list.items) === JSON.stringify(single)
    ) {
      text = `${typeText(single)}, or a list of them`;
    } else {
      text = rest.map(typeText).join(' or ');
    }
    return nullable ? `${text}, or \`null\`` : text;
  }
  if (schema.enum !== undefined) return schema.enum.map((value) => `\`${JSON.stringify(value)}\``).join(', ');
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  if (types.length > 1) return types.map((type) => typeText({ ...schema, type })).join(' or ');
  const [type] = types;
  switch (type) {
    case 'integer':
    case 'number': {
      const name = type === 'integer' ? 'integer' : 'number';
      const low = saysNothing(schema.minimum) ? undefined : schema.minimum;
      const high = saysNothing(schema.maximum) ? undefined : schema.maximum;
      if (low !== undefined && high !== undefined) return `${name} ${low}–${high}`;
      if (low !== undefined) return `${name} ≥ ${low}`;
      if (high !== undefined) return `${name} ≤ ${high}`;
      return name;
    }
    case 'string':
      return schema.format !== undefined ? (FORMATS[schema.format] ?? schema.format) : 'string';
    case 'boolean':
      return 'boolean';
    case 'null':
      return '`null`';
    case 'array':
      return `list of ${schema.items === undefined ? 'values' : typeText(schema.items)}${schema.minItems !== undefined && schema.minItems > 0 ? ` (at least ${schema.minItems})` : ''}`;
    case 'object':
      return 'object';
    default:
      return 'any';
  }
}

/** A schema as a TypeScript-like type, for answers: nested objects indented, descriptions as comments. */
export function shapeText(schema: JsonSchema, indent = ''): string {
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives !== undefined) return alternatives.map((entry) => shapeText(entry, indent)).join(' | ');
  if (schema.enum !== undefined) return schema.enum.map((value) => JSON.stringify(value)).join(' | ');
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (Array.isArray(schema.type)) return schema.type.map((type) => shapeText({ ...schema, type }, indent)).join(' | ');
  switch (schema.type) {
    case 'integer':
    case 'number':
      return 'number';
    case 'string':
    case 'boolean':
    case 'null':
      return schema.type;
    case 'array': {
      const item = schema.items === undefined ? 'unknown' : shapeText(schema.items, indent);
      return item.includes(' | ') && !item.startsWith('{') ? `(${item})[]` : `${item}[]`;
    }
    case 'object': {
      const entries = Object.entries(schema.properties ?? {});
      if (entries.length === 0) return 'object';
      const inner = `${indent}  `;
      const lines = entries.map(([name, property]) => {
        const optional = schema.required?.includes(name) === true ? '' : '?';
        const comment = property.description === undefined ? '' : ` // ${property.description}`;
        return `${inner}${name}${optional}: ${shapeText(property, inner)};${comment}`;
      });
      return `{\n${lines.join('\n')}\n${indent}}`;
    }
    default:
      return 'unknown';
  }
}
