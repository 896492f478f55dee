// Keeps functions short enough to read at once: lists every function in src/ longer than
// MAX_LINES, and fails on any that is not in the list of known long ones below (each a debt to
// pay, or a table that reads best whole). `npm run check` runs it; a function that gets shorter
// than the bound must leave the list too, so that the list only ever shrinks.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { KNOWN_LONG_FUNCTIONS } from './known-long.js';

export const MAX_LINES = 80;

export interface LongFunction {
  /** `src/…/file.ts:name`, the key of KNOWN_LONG_FUNCTIONS. */
  readonly key: string;
  readonly line: number;
  readonly lines: number;
}

/** The functions of one source text longer than `maxLines`, by the name a reader would search for. */
export function longFunctions(file: string, text: string, maxLines = MAX_LINES): LongFunction[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node): void => {
    if (isFunctionWithBody(node)) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > maxLines) found.push({ key: `${file}:${nameOf(node)}`, line: first + 1, lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function isFunctionWithBody(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return (
    (ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isConstructorDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isSetAccessorDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node)) &&
    node.body !== undefined
  );
}

/** The declared name, or the name of what the function is assigned to or passed as. */
function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (ts.isConstructorDeclaration(node)) return `${classNameOf(node)}.constructor`;
  if (node.name !== undefined && ts.isIdentifier(node.name)) {
    return ts.isMethodDeclaration(node) || ts.isAccessor(node)
      ? `${classNameOf(node)}.${node.name.text}`
      : node.name.text;
  }
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (ts.isPropertyAssignment(parent) && (ts.isIdentifier(parent.name) || ts.isStringLiteral(parent.name)))
    return parent.name.text;
  if (ts.isCallExpression(parent)) return `(argument of ${parent.expression.getText().slice(0, 40)})`;
  return '(anonymous)';
}

function classNameOf(node: ts.Node): string {
  const owner = node.parent;
  return (ts.isClassDeclaration(owner) || ts.isClassExpression(owner)) && owner.name !== undefined
    ? owner.name.text
    : '(class)';
}

/** The verdict over the tracked files: what is too long and unknown, and what is known but no longer long. */
export function judge(found: readonly LongFunction[], known: ReadonlySet<string>) {
  const keys = new Set(found.map((item) => item.key));
  return {
    unknown: found.filter((item) => !known.has(item.key)),
    paidOff: [...known].filter((key) => !keys.has(key)),
  };
}

function main(): void {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const files = ts.sys
    .readDirectory(path.join(root, 'src'), ['.ts'], undefined, undefined)
    .map((file) => path.relative(root, file))
    .sort();
  const found = files.flatMap((file) => longFunctions(file, readFileSync(path.join(root, file), 'utf8')));
  const { unknown, paidOff } = judge(found, new Set(KNOWN_LONG_FUNCTIONS));
  for (const item of unknown)
    console.error(
      `${item.key} (line ${item.line}) is ${item.lines} lines, over ${MAX_LINES}: split it into named steps`,
    );
  for (const key of paidOff)
    console.error(
      `${key} is no longer over ${MAX_LINES} lines (or is gone): take it out of tools/function-length/known-long.ts`,
    );
  console.log(
    `functions over ${MAX_LINES} lines in src/: ${found.length}, of them known ${found.length - unknown.length}`,
  );
  if (unknown.length > 0 || paidOff.length > 0) process.exitCode = 1;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) main();
