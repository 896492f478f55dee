// Checks an Apple configuration profile against Apple's own YAML description of its payloads
// (test/support/apple-schema/, from Apple's device-management repository): every key known for
// its payload type, of the declared type, required keys present, values within `rangelist`.
// The property list is read here by a small reader of its own that keeps each value's tag
// (`<integer>` and `<real>` are both numbers once parsed by the plist library).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parsePlist } from 'plist';
import { parse as parseYaml } from 'yaml';

/** The keys the WireGuard app needs beyond Apple's file: nothing else may be unknown. */
export const WIREGUARD_APP_EXCEPTIONS: readonly SchemaException[] = [
  {
    payloadType: 'com.apple.vpn.managed',
    path: ['VPN', 'RemoteAddress'],
    spec: { key: 'RemoteAddress', type: '<string>', presence: 'required' },
    source:
      'wireguard-apple MOBILECONFIG.md: "RemoteAddress" is required in the VPN dictionary (the endpoint shown in Settings)',
  },
  {
    payloadType: 'com.apple.vpn.managed',
    path: ['VendorConfig', 'WgQuickConfig'],
    spec: { key: 'WgQuickConfig', type: '<string>', presence: 'required' },
    source:
      'wireguard-apple MOBILECONFIG.md: the vendor-defined VendorConfig of the WireGuard app holds the wg-quick file as "WgQuickConfig"',
  },
];

/** wg-quick keys the WireGuard app refuses in an imported tunnel. */
const KEYS_THE_APP_REJECTS = ['FwMark', 'Table', 'PreUp', 'PostUp', 'PreDown', 'PostDown', 'SaveConfig'];

/** Asserts the profile conforms and its wg-quick text has no key the app refuses. */
export function assertConformsToAppleSchema(xml: string, what: string): void {
  assert.deepEqual(validateProfile(xml, WIREGUARD_APP_EXCEPTIONS), [], what);
  const content = (parsePlist(xml) as { PayloadContent: { VendorConfig: { WgQuickConfig: string } }[] }).PayloadContent;
  for (const payload of content) {
    const keys = payload.VendorConfig.WgQuickConfig.split('\n').map((line) => line.split('=')[0]?.trim().toLowerCase());
    for (const rejected of KEYS_THE_APP_REJECTS)
      assert.ok(!keys.includes(rejected.toLowerCase()), `${what}: WgQuickConfig has no ${rejected}`);
  }
}

const SCHEMA_DIR = path.join(import.meta.dirname, 'apple-schema');

/** One key as Apple's YAML describes it. */
export interface KeySpec {
  readonly key: string;
  /** `<string>`, `<integer>`, `<boolean>`, `<array>`, `<dictionary>`, `<data>`, `<date>`, `<real>`, `<any>`. */
  readonly type: string;
  readonly presence?: 'required' | 'optional';
  readonly rangelist?: readonly unknown[];
  readonly subkeys?: readonly KeySpec[];
}

/** A key the WireGuard app needs that Apple's file does not list: where it goes, and who says so. */
export interface SchemaException {
  readonly payloadType: string;
  /** Dictionary keys from the payload down to the key, e.g. `['VPN', 'RemoteAddress']`. */
  readonly path: readonly string[];
  readonly spec: KeySpec;
  readonly source: string;
}

/** A property list value with the tag it was written with. */
export type PlistNode =
  | { readonly tag: 'string' | 'date' | 'data'; readonly value: string }
  | { readonly tag: 'integer' | 'real'; readonly value: number }
  | { readonly tag: 'boolean'; readonly value: boolean }
  | { readonly tag: 'array'; readonly value: readonly PlistNode[] }
  | { readonly tag: 'dict'; readonly value: ReadonlyMap<string, PlistNode> };

const TYPE_TAGS: Readonly<Record<string, PlistNode['tag']>> = {
  '<string>': 'string',
  '<integer>': 'integer',
  '<real>': 'real',
  '<boolean>': 'boolean',
  '<array>': 'array',
  '<dictionary>': 'dict',
  '<data>': 'data',
  '<date>': 'date',
};

function loadPayloadKeys(file: string): KeySpec[] {
  const document = parseYaml(readFileSync(path.join(SCHEMA_DIR, file), 'utf8'), { maxAliasCount: -1 }) as {
    payloadkeys: KeySpec[];
  };
  return document.payloadkeys;
}

/** The keys of a payload type (its own and the common payload keys), with the exceptions added. */
function payloadSchema(payloadType: string, exceptions: readonly SchemaException[]): KeySpec[] {
  let own: KeySpec[];
  try {
    own = loadPayloadKeys(`${payloadType}.yaml`);
  } catch {
    throw new Error(`no schema for payload type ${payloadType}`);
  }
  const common = loadPayloadKeys('CommonPayloadKeys.yaml').filter((spec) => !own.some((mine) => mine.key === spec.key));
  let keys = [...own, ...common];
  for (const exception of exceptions.filter((entry) => entry.payloadType === payloadType))
    keys = withException(keys, exception.path, exception.spec);
  return keys;
}

function withException(keys: readonly KeySpec[], keyPath: readonly string[], spec: KeySpec): KeySpec[] {
  const [head, ...rest] = keyPath;
  if (rest.length === 0) return [...keys.filter((entry) => entry.key !== spec.key), spec];
  return keys.map((entry) =>
    entry.key === head ? { ...entry, subkeys: withException(entry.subkeys ?? [], rest, spec) } : entry,
  );
}

/** Every problem found, as `Path.To.Key: what is wrong`; empty when the profile conforms. */
export function validateProfile(xml: string, exceptions: readonly SchemaException[]): string[] {
  const problems: string[] = [];
  const top = readPlist(xml);
  if (top.tag !== 'dict') return ['the property list is not a dictionary'];
  const topKeys = loadPayloadKeys('TopLevel.yaml');
  checkDict(top, topKeys, 'TopLevel', problems, false);
  const content = top.value.get('PayloadContent');
  if (content?.tag !== 'array') return problems;
  for (const [index, payload] of content.value.entries()) {
    const where = `PayloadContent[${index}]`;
    const type = payload.tag === 'dict' ? payload.value.get('PayloadType') : undefined;
    if (payload.tag !== 'dict' || type?.tag !== 'string') {
      problems.push(`${where}: a payload is a dictionary with a PayloadType`);
      continue;
    }
    try {
      checkDict(payload, payloadSchema(type.value, exceptions), `${where} (${type.value})`, problems, true);
    } catch (error) {
      problems.push(`${where}: ${(error as Error).message}`);
    }
  }
  return problems;
}

/** `descend`: check the dictionaries inside too (the top level's PayloadContent items are checked per payload type). */
function checkDict(
  node: Extract<PlistNode, { tag: 'dict' }>,
  specs: readonly KeySpec[],
  where: string,
  problems: string[],
  descend: boolean,
): void {
  const [only] = specs;
  // `ANY`: any key, each of the given type (TopLevel's PayloadContent items, ConsentText).
  if (specs.length === 1 && only?.key === 'ANY') {
    for (const [key, value] of node.value) checkValue(value, only, `${where}.${key}`, problems, descend);
    return;
  }
  for (const [key, value] of node.value) {
    const spec = specs.find((entry) => entry.key === key);
    if (spec === undefined) problems.push(`${where}.${key}: not a key of this dictionary in Apple's schema`);
    else checkValue(value, spec, `${where}.${key}`, problems, descend);
  }
  for (const spec of specs) {
    if (spec.presence === 'required' && !node.value.has(spec.key))
      problems.push(`${where}.${spec.key}: required, missing`);
  }
}

function checkValue(node: PlistNode, spec: KeySpec, where: string, problems: string[], descend: boolean): void {
  if (spec.type === '<any>') return;
  const tag = TYPE_TAGS[spec.type];
  if (tag === undefined) {
    problems.push(`${where}: the schema's type ${spec.type} is unknown to this checker`);
    return;
  }
  if (node.tag !== tag) {
    problems.push(`${where}: <${node.tag}>, the schema says ${spec.type}`);
    return;
  }
  if (spec.rangelist !== undefined && !spec.rangelist.includes(node.value)) {
    problems.push(`${where}: ${JSON.stringify(node.value)} is not one of ${JSON.stringify(spec.rangelist)}`);
  }
  if (node.tag === 'dict' && spec.subkeys !== undefined && descend)
    checkDict(node, spec.subkeys, where, problems, descend);
  if (node.tag === 'array' && descend) {
    const element = spec.subkeys?.[0];
    for (const [index, item] of node.value.entries()) {
      if (element === undefined) problems.push(`${where}[${index}]: the schema describes no elements`);
      else checkValue(item, element, `${where}[${index}]`, problems, descend);
    }
  }
}

/** The tokens of an XML property list: tags (with their name) and the text between them. */
const TOKEN = /<(\/?)([A-Za-z]+)[^>]*?(\/?)>|([^<]+)/g;

/** Reads an XML property list as the plist library writes it, keeping each value's tag. */
export function readPlist(xml: string): PlistNode {
  const body = xml.replace(/^<\?xml[^>]*\?>\s*/, '').replace(/^<!DOCTYPE[^>]*>\s*/, '');
  const tokens = [...body.matchAll(TOKEN)]
    .map((match) => ({ close: match[1] === '/', name: match[2] ?? '', empty: match[3] === '/', text: match[4] }))
    .filter((token) => token.text === undefined || token.text.trim() !== '');
  let position = 0;
  const next = () => {
    const token = tokens[position++];
    if (token === undefined) throw new Error('the property list ends early');
    return token;
  };
  const textUntil = (name: string): string => {
    let text = '';
    for (let token = next(); !(token.close && token.name === name); token = next()) {
      if (token.text === undefined) throw new Error(`<${token.name}> inside <${name}>`);
      text += token.text;
    }
    return decodeEntities(text);
  };
  const value = (): PlistNode => {
    const token = next();
    if (token.text !== undefined || token.close) throw new Error(`unexpected ${token.text ?? `</${token.name}>`}`);
    switch (token.name) {
      case 'plist':
        return value();
      case 'true':
      case 'false':
        return { tag: 'boolean', value: token.name === 'true' };
      case 'string':
      case 'date':
      case 'data':
        return { tag: token.name, value: token.empty ? '' : textUntil(token.name) };
      case 'integer':
      case 'real':
        return { tag: token.name, value: Number(textUntil(token.name)) };
      case 'array': {
        const items: PlistNode[] = [];
        if (!token.empty) while (!(tokens[position]?.close && tokens[position]?.name === 'array')) items.push(value());
        if (!token.empty) position++;
        return { tag: 'array', value: items };
      }
      case 'dict': {
        const entries = new Map<string, PlistNode>();
        while (!token.empty && !(tokens[position]?.close && tokens[position]?.name === 'dict')) {
          const keyToken = next();
          if (keyToken.name !== 'key' || keyToken.close) throw new Error('a dictionary entry starts with <key>');
          const key = textUntil('key');
          if (entries.has(key)) throw new Error(`key ${key} twice in one dictionary`);
          entries.set(key, value());
        }
        if (!token.empty) position++;
        return { tag: 'dict', value: entries };
      }
      default:
        throw new Error(`<${token.name}> is not a property list element`);
    }
  };
  return value();
}

function decodeEntities(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|apos|#x[0-9a-fA-F]+|#\d+);/g, (_, entity: string) => {
    if (entity === 'amp') return '&';
    if (entity === 'lt') return '<';
    if (entity === 'gt') return '>';
    if (entity === 'quot') return '"';
    if (entity === 'apos') return "'";
    return String.fromCodePoint(
      entity.startsWith('#x') ? Number.parseInt(entity.slice(2), 16) : Number(entity.slice(1)),
    );
  });
}
