// A PATCH's attribute names, and those of a POST's or PUT's resource, in the schema's own spelling
// before scimmy reads them. RFC 7643 §2.1 makes attribute names case-insensitive and RFC 7644
// §3.10 lets a client qualify them with their schema's URN (Entra ID sends
// `urn:ietf:params:scim:schemas:core:2.0:User:active`). scimmy finds an attribute without regard
// to case but then writes the value under the name as sent, so `Active`, `USERNAME` or a
// URN-qualified core name failed a PATCH with invalidPath, and a resource's URN-qualified core
// name was dropped. Paths and the keys of values (also of a value without a path, which is a
// partial resource) are rewritten here; a name the schema does not declare is left as sent, for
// scimmy to refuse with invalidPath (or, in a resource, to leave out). One attribute named twice
// in one object with two values is not guessed between.
import { isDeepStrictEqual } from 'node:util';
import SCIMMY from 'scimmy';

type Definition = SCIMMY.Types.SchemaDefinition;
type Attribute = SCIMMY.Types.Attribute;
/** What a path names: an attribute, a schema extension (its URN alone), or nothing the schema declares. */
type Target = Attribute | Definition | undefined;

/** RFC 7644 §3.10 without the URN: `name`, `name.sub`, `name[filter]` or `name[filter].sub`. */
const ATTRIBUTE_PATH = /^([A-Za-z][\w$-]*)(\[.*\])?(?:\.([A-Za-z][\w$-]*))?$/s;

/**
 * The operation's path, and the keys of its value, as `definition` spells them. An operation
 * that is not an object is left for scimmy to refuse.
 */
export function canonicalOperation(operation: unknown, definition: Definition): unknown {
  if (!isRecord(operation)) return operation;
  const { path, value } = operation;
  if (typeof path !== 'string')
    return 'value' in operation ? { ...operation, value: canonicalValue(value, definition) } : operation;
  const target = resolved(path, definition);
  // RFC 7644 §3.5.2: a path may name a schema. The core schema's URN with an object to add or
  // replace names the resource itself, so the operation is one without a path (an enterprise URN
  // keeps its path, which scimmy applies to the extension's part): its `active: false` disables
  // the user. A remove of the whole resource stays refused.
  if (target.target === definition && isRecord(operation['value']) && addsOrReplaces(operation['op']))
    return { ...withoutPath(operation), value: partialResource(operation['value'], definition, new Set()) };
  return {
    ...operation,
    path: target.path,
    ...('value' in operation ? { value: canonicalValue(value, target.target) } : {}),
  };
}

/**
 * One attribute given twice in one object (in two cases, bare and URN-qualified, or by the
 * extension's qualified name beside the extension's part) with two values: a reader would have to
 * pick one, and a client whose `active: false` lost would believe the user disabled.
 */
export class AttributeGivenTwiceError extends Error {
  override readonly name = 'AttributeGivenTwiceError';

  constructor(readonly attribute: string) {
    super(
      `"${attribute}" is given twice with different values (attribute names are case-insensitive, and may be qualified by their schema's URN)`,
    );
  }
}

/**
 * A resource of a POST or PUT with its keys as `definition` spells them, read as a PATCH value
 * without a path is: a URN-qualified core name is the bare one. The values of `keptAsSent`
 * (canonical names) are not rewritten (a group's members: read apart, by id, in any case).
 */
export function canonicalResource(
  resource: Record<string, unknown>,
  definition: Definition,
  keptAsSent: ReadonlySet<string> = new Set(),
): Record<string, unknown> {
  return partialResource(resource, definition, keptAsSent);
}

/** The path with its schema URN and attribute names as `definition` spells them (the core URN left out), and what it names. */
function resolved(path: string, definition: Definition): { readonly path: string; readonly target: Target } {
  const scope = scopeOf(path, definition);
  if (scope === null) return { path, target: undefined };
  if (scope.rest === '') return { path: scope.prefix === '' ? path : scope.prefix, target: scope.schema };
  const match = ATTRIBUTE_PATH.exec(scope.rest);
  const attribute = match === null ? undefined : named(attributesOf(scope.schema), match[1] ?? '');
  if (match === null || attribute === undefined) return { path, target: undefined };
  const [, , filter = '', subName] = match;
  if (subName === undefined) return { path: `${scope.prefix}${attribute.name}${filter}`, target: attribute };
  const sub = named(attribute.subAttributes ?? [], subName);
  if (sub === undefined) return { path, target: undefined };
  return { path: `${scope.prefix}${attribute.name}${filter}.${sub.name}`, target: sub };
}

/**
 * Which schema a path is in: the core one (its URN, if given, dropped: scimmy takes the bare
 * name) or an extension (its URN kept, as scimmy needs it); null for a URN the definition
 * does not know.
 */
function scopeOf(
  path: string,
  definition: Definition,
): { readonly prefix: string; readonly rest: string; readonly schema: Definition } | null {
  const lower = path.toLowerCase();
  if (!lower.startsWith('urn:')) return { prefix: '', rest: path, schema: definition };
  for (const extension of extensionsOf(definition)) {
    const id = extension.id.toLowerCase();
    if (lower === id) return { prefix: extension.id, rest: '', schema: extension };
    if (lower.startsWith(`${id}:`))
      return { prefix: `${extension.id}:`, rest: path.slice(id.length + 1), schema: extension };
  }
  const id = definition.id.toLowerCase();
  if (lower === id) return { prefix: '', rest: '', schema: definition };
  if (lower.startsWith(`${id}:`)) return { prefix: '', rest: path.slice(id.length + 1), schema: definition };
  return null;
}

/** A value with its keys as the attribute (or schema) it is for spells them, at any depth. */
function canonicalValue(value: unknown, target: Target): unknown {
  if (Array.isArray(value)) return value.map((entry) => canonicalValue(entry, target));
  if (!isRecord(value) || target === undefined) return value;
  // A partial resource (a value without a path) or an extension's part: each key is a path.
  if (target instanceof SCIMMY.Types.SchemaDefinition) return partialResource(value, target, new Set());
  if (String(target.type) !== 'complex') return value;
  const subAttributes = target.subAttributes ?? [];
  return eachOnce(
    Object.entries(value).map(([key, inner]) => {
      const sub = named(subAttributes, key);
      return sub === undefined ? [key, inner] : [sub.name, canonicalValue(inner, sub)];
    }),
  );
}

/** A partial resource of `definition`, each key a path; an extension's attribute also named by its qualified name holds one value. */
function partialResource(
  value: Record<string, unknown>,
  definition: Definition,
  keptAsSent: ReadonlySet<string>,
): Record<string, unknown> {
  const canonical = eachOnce(
    Object.entries(value).flatMap(([key, inner]): (readonly [string, unknown])[] => {
      const at = resolved(key, definition);
      // The core schema's URN as a key holds core attributes (`{"urn:…:core:2.0:User":
      // {"active": false}}`): they are the resource's own, each given once with the rest.
      if (at.target === definition && isRecord(inner))
        return Object.entries(partialResource(inner, definition, keptAsSent));
      return [[at.path, keptAsSent.has(at.path) ? inner : canonicalValue(inner, at.target)]];
    }),
  );
  for (const extension of extensionsOf(definition)) {
    const part = canonical[extension.id];
    if (!isRecord(part)) continue;
    for (const [name, inner] of Object.entries(part)) {
      const qualified = `${extension.id}:${name}`;
      if (Object.hasOwn(canonical, qualified) && !isDeepStrictEqual(canonical[qualified], inner))
        throw new AttributeGivenTwiceError(qualified);
    }
  }
  return canonical;
}

/** The entries as an object; a name given twice with two values is refused, with one value taken once. */
function eachOnce(entries: readonly (readonly [string, unknown])[]): Record<string, unknown> {
  const values = new Map<string, unknown>();
  for (const [name, value] of entries) {
    if (values.has(name) && !isDeepStrictEqual(values.get(name), value)) throw new AttributeGivenTwiceError(name);
    values.set(name, value);
  }
  // fromEntries defines each key: a `__proto__` key stays a key, never the object's prototype.
  return Object.fromEntries(values);
}

function named(attributes: readonly Attribute[], name: string): Attribute | undefined {
  const lower = name.toLowerCase();
  return attributes.find((attribute) => attribute.name.toLowerCase() === lower);
}

/** The attributes a definition declares (its extensions are listed among them by scimmy, apart). */
function attributesOf(definition: Definition): Attribute[] {
  return (definition.attributes as readonly unknown[]).filter(
    (attribute): attribute is Attribute => attribute instanceof SCIMMY.Types.Attribute,
  );
}

function extensionsOf(definition: Definition): Definition[] {
  return (definition.attributes as readonly unknown[]).filter(
    (attribute): attribute is Definition => attribute instanceof SCIMMY.Types.SchemaDefinition,
  );
}

function addsOrReplaces(op: unknown): boolean {
  return typeof op === 'string' && ['add', 'replace'].includes(op.toLowerCase());
}

/** The operation without its `path` (a value naming the resource itself). */
function withoutPath(operation: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(operation).filter(([name]) => name !== 'path'));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
