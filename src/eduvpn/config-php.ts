// Reads an eduVPN config.php on a host without PHP: the file is parsed (php-parser) and only its
// literals are evaluated, with PHP's own rules for array keys, so the result equals what
// `json_encode(require 'config.php')` gives. Anything that needs PHP to run (a constant, a call,
// a variable) is refused with its line, pointing at the JSON route: the output of `php -r` on a
// host that has PHP, which is accepted as it is.
import { Engine, type Node as PhpNode } from 'php-parser';

/** What a config.php evaluates to, as JSON: PHP lists become arrays, other PHP arrays objects. */
export type PhpValue = string | number | boolean | null | readonly PhpValue[] | { readonly [key: string]: PhpValue };

/** The file cannot be read as configuration; the message names the file, the line and what to do. */
export class ConfigPhpError extends Error {}

/** What to do when a file needs PHP itself; the command that turns it into JSON. */
export const JSON_ROUTE =
  "turn it into JSON on a host with PHP (php -r 'echo json_encode(require $argv[1], JSON_PRETTY_PRINT|JSON_UNESCAPED_SLASHES|JSON_THROW_ON_ERROR), PHP_EOL;' config.php > config.json) and give that file instead";

/** A config.php's text, or the JSON made of it (told by a `.json` name or by text that opens with `{`). */
export function readConfigPhp(text: string, fileName: string): PhpValue {
  if (fileName.endsWith('.json') || /^\s*[{[]/.test(text)) return readJson(text, fileName);
  return evaluateConfigPhp(text, fileName);
}

function readJson(text: string, fileName: string): PhpValue {
  try {
    return JSON.parse(text) as PhpValue;
  } catch (error) {
    throw new ConfigPhpError(`${fileName}: not valid JSON (${(error as Error).message})`);
  }
}

/** Evaluates the `return` of a PHP file whose statements are only `declare(...)` and that `return`. */
export function evaluateConfigPhp(text: string, fileName: string): PhpValue {
  const parser = new Engine({ parser: { extractDoc: false, php8: true }, ast: { withPositions: true } });
  let program: PhpNode & { children: PhpNode[] };
  try {
    program = parser.parseCode(text, fileName);
  } catch (error) {
    const line = (error as { lineNumber?: number }).lineNumber;
    const message = (error as Error).message.replace(/ on line \d+$/, '');
    throw new ConfigPhpError(
      `${fileName}${line === undefined ? '' : `:${line}`}: not PHP that can be read: ${message}`,
    );
  }
  const returned = findReturn(program.children, fileName);
  if (returned === null) throw new ConfigPhpError(`${fileName}: the file does not return an array (no "return [...]")`);
  return new Evaluator(fileName).value(returned);
}

/** The expression of the file's one `return`, past `declare(...)` statements (whose own children count too). */
function findReturn(statements: readonly PhpNode[], fileName: string): PhpNode | null {
  for (const statement of statements) {
    switch (statement.kind) {
      case 'declare': {
        const inner = findReturn((statement as PhpNode & { children: PhpNode[] }).children, fileName);
        if (inner !== null) return inner;
        break;
      }
      case 'inline':
      case 'noop':
        break;
      case 'return': {
        const expression = (statement as PhpNode & { expr: PhpNode | null }).expr;
        if (expression === null) throw refusal(fileName, statement, 'a "return" without a value');
        return expression;
      }
      default:
        throw refusal(fileName, statement, `a statement (${statement.kind}) before the "return"`);
    }
  }
  return null;
}

function refusal(fileName: string, node: PhpNode, what: string): ConfigPhpError {
  const line = node.loc?.start.line;
  return new ConfigPhpError(
    `${fileName}${line === undefined ? '' : `:${line}`}: ${what} needs PHP to evaluate; only literals are read here: ${JSON_ROUTE}`,
  );
}

/** PHP's array: keys in insertion order, integer keys apart from string ones, the next free index. */
class PhpArray {
  readonly entries = new Map<string, { key: string | number; value: PhpValue }>();
  private nextIndex = 0;

  append(value: PhpValue): void {
    this.set(this.nextIndex, value);
  }

  set(key: string | number, value: PhpValue): void {
    const normalised = normaliseKey(key);
    this.entries.set(typeof normalised === 'number' ? `i${normalised}` : `s${normalised}`, { key: normalised, value });
    if (typeof normalised === 'number' && normalised >= this.nextIndex) this.nextIndex = normalised + 1;
  }

  /** As json_encode: a list when the keys are 0, 1, 2, … in order (an empty array too), else an object. */
  toJson(): PhpValue {
    const values = [...this.entries.values()];
    if (values.every((entry, index) => entry.key === index)) return values.map((entry) => entry.value);
    return Object.fromEntries(values.map((entry) => [String(entry.key), entry.value]));
  }
}

/** A string of a decimal integer without a leading zero or plus is an integer key in PHP ("5" → 5, "05" stays). */
function normaliseKey(key: string | number): string | number {
  if (typeof key === 'number') return key;
  if (/^(0|-?[1-9]\d*)$/.test(key)) {
    const number = Number(key);
    if (Number.isSafeInteger(number)) return number;
  }
  return key;
}

class Evaluator {
  constructor(private readonly fileName: string) {}

  value(node: PhpNode): PhpValue {
    switch (node.kind) {
      case 'array':
        return this.array(node as PhpNode & { items: PhpNode[] });
      case 'string':
      case 'nowdoc':
        return (node as PhpNode & { value: string }).value;
      case 'encapsed':
        return this.encapsed(node as PhpNode & { value: PhpNode[]; type: string });
      case 'number':
        return phpNumber((node as PhpNode & { value: string }).value);
      case 'boolean':
        return (node as PhpNode & { value: boolean }).value;
      case 'nullkeyword':
        return null;
      case 'unary':
        return this.unary(node as PhpNode & { type: string; what: PhpNode });
      case 'bin':
        return this.concatenation(node as PhpNode & { type: string; left: PhpNode; right: PhpNode });
      case 'parenthesis':
        return this.value((node as PhpNode & { inner: PhpNode }).inner);
      default:
        throw refusal(this.fileName, node, describeNode(node));
    }
  }

  private array(node: PhpNode & { items: PhpNode[] }): PhpValue {
    const array = new PhpArray();
    for (const item of node.items) {
      if (item.kind === 'noop') continue;
      if (item.kind !== 'entry') {
        array.append(this.value(item));
        continue;
      }
      const entry = item as PhpNode & { key: PhpNode | null; value: PhpNode; byRef: boolean; unpack: boolean };
      if (entry.byRef || entry.unpack)
        throw refusal(this.fileName, item, entry.byRef ? 'a reference (&)' : 'unpacking (...)');
      const value = this.value(entry.value);
      if (entry.key === null) array.append(value);
      else array.set(this.key(entry.key), value);
    }
    return array.toJson();
  }

  /** PHP casts keys: bools and floats to integers, null to "". */
  private key(node: PhpNode): string | number {
    const key = this.value(node);
    if (typeof key === 'string') return key;
    if (typeof key === 'number') return Math.trunc(key);
    if (typeof key === 'boolean') return key ? 1 : 0;
    if (key === null) return '';
    throw refusal(this.fileName, node, 'an array as an array key');
  }

  /** A double-quoted string or heredoc: literal text only; `$variable` inside needs PHP. */
  private encapsed(node: PhpNode & { value: PhpNode[]; type: string }): PhpValue {
    if (node.type === 'shell') throw refusal(this.fileName, node, 'a shell command (`...`)');
    return node.value
      .map((part) => {
        const expression = (part as PhpNode & { expression: PhpNode }).expression;
        if (expression.kind !== 'string') throw refusal(this.fileName, expression, describeNode(expression));
        return (expression as PhpNode & { value: string }).value;
      })
      .join('');
  }

  private unary(node: PhpNode & { type: string; what: PhpNode }): PhpValue {
    const operand = this.value(node.what);
    if ((node.type === '-' || node.type === '+') && typeof operand === 'number')
      return node.type === '-' ? -operand : operand;
    throw refusal(this.fileName, node, `the operator "${node.type}" on ${JSON.stringify(operand)}`);
  }

  private concatenation(node: PhpNode & { type: string; left: PhpNode; right: PhpNode }): PhpValue {
    if (node.type !== '.') throw refusal(this.fileName, node, `the operator "${node.type}"`);
    const left = this.value(node.left);
    const right = this.value(node.right);
    if (typeof left !== 'string' || typeof right !== 'string')
      throw refusal(this.fileName, node, 'concatenating something other than two strings');
    return left + right;
  }
}

/** A PHP number literal: decimal, 0x, 0o/0, 0b, with `_` separators; a float when it has `.` or an exponent. */
function phpNumber(raw: string): number {
  const text = raw.replaceAll('_', '').toLowerCase();
  if (/^0x[0-9a-f]+$/.test(text)) return Number.parseInt(text.slice(2), 16);
  if (/^0b[01]+$/.test(text)) return Number.parseInt(text.slice(2), 2);
  if (/^0o?[0-7]+$/.test(text)) return Number.parseInt(text.replace(/^0o?/, ''), 8);
  return Number(text);
}

/** What a refused node is, in an administrator's words, with its name when it has one. */
function describeNode(node: PhpNode): string {
  const named = node as PhpNode & { name?: unknown; what?: { name?: unknown } };
  switch (node.kind) {
    case 'name':
      return `the constant ${String(named.name)}`;
    case 'staticlookup':
    case 'classconstant':
      return 'a class constant';
    case 'call':
      return `a call of ${typeof named.what?.name === 'string' ? `${named.what.name}()` : 'a function'}`;
    case 'variable':
      return `the variable $${String(named.name)}`;
    case 'magic':
      return 'a magic constant';
    default:
      return `an expression (${node.kind})`;
  }
}
