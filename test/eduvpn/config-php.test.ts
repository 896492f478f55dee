// The config.php reader: every literal form PHP allows in a configuration file evaluates as PHP
// itself evaluates it (compared with PHP's own json_encode), and whatever needs PHP to run is
// refused with its line and the JSON route.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { ConfigPhpError, evaluateConfigPhp, readConfigPhp } from '../../src/eduvpn/config-php.js';
import { NODE_CONFIG_PHP, PORTAL_CONFIG_PHP } from '../support/eduvpn-config-php.js';

const run = promisify(execFile);

/** Every literal form: quoting and escapes, heredoc and nowdoc, numbers, PHP's key casts and list rules. */
const LITERALS_PHP = `<?php
declare(strict_types=1);
/* a block comment */
return array(
  'single' => 'it\\'s \\n not a newline \\\\ one backslash',
  "double" => "tab\\there \\x41\\101\\u{1F600} \\$ \\q \\e\\v\\f\\0 end",
  'negative' => -5, 'plus' => +3, 'float' => 1.5e3, 'negativeFloat' => -1.25,
  'hex' => 0x1F, 'octal' => 017, 'octalO' => 0o17, 'binary' => 0b101, 'separated' => 1_000_000,
  'true' => true, 'false' => FALSE, 'null' => NULL,
  'joined' => 'a' . "b" . ('c' . 'd'),
  'heredoc' => <<<EOT
    first
      indented
    EOT,
  'nowdoc' => <<<'EOT'
  raw \\n $notAVariable
  EOT,
  'list' => [1, 2, 3],
  'gap' => [1, 2, 5 => 3, 4],
  'fromOne' => [1 => 'a', 2 => 'b'],
  'explicitList' => [0 => 'a', 1 => 'b'],
  'mixed' => ['a', 'key' => 1, 'b'],
  'casts' => ['5' => 'five', '05' => 'oh-five', true => 'true', null => 'null', 1.7 => 'float'],
  'overwritten' => ['x' => 1, 'x' => 2],
  'empty' => [],
  'unicode' => "ü", # a hash comment
);
`;

function phpFile(t: { after: (fn: () => void) => void }, text: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-config-php-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'config.php');
  writeFileSync(file, text);
  return file;
}

/** What PHP itself makes of the file, by the command the documentation gives (php-cli is in .ci/run). */
async function phpJsonOf(file: string): Promise<unknown> {
  const { stdout } = await run('php', [
    '-r',
    'echo json_encode(require $argv[1], JSON_PRETTY_PRINT|JSON_UNESCAPED_SLASHES|JSON_THROW_ON_ERROR), PHP_EOL;',
    file,
  ]);
  return JSON.parse(stdout);
}

function refusal(text: string): string {
  try {
    evaluateConfigPhp(text, 'config.php');
  } catch (error) {
    assert.ok(error instanceof ConfigPhpError, `expected a ConfigPhpError, got ${String(error)}`);
    return error.message;
  }
  assert.fail('the file was read');
}

test('every literal form evaluates to what PHP makes of it', () => {
  assert.deepEqual(evaluateConfigPhp(LITERALS_PHP, 'config.php'), {
    single: "it's \\n not a newline \\ one backslash",
    double: 'tab\there AA\u{1F600} $ \\q \u001b\u000b\f\u0000 end',
    negative: -5,
    plus: 3,
    float: 1500,
    negativeFloat: -1.25,
    hex: 31,
    octal: 15,
    octalO: 15,
    binary: 5,
    separated: 1_000_000,
    true: true,
    false: false,
    null: null,
    joined: 'abcd',
    heredoc: 'first\n  indented',
    nowdoc: 'raw \\n $notAVariable',
    list: [1, 2, 3],
    gap: { 0: 1, 1: 2, 5: 3, 6: 4 },
    fromOne: { 1: 'a', 2: 'b' },
    explicitList: ['a', 'b'],
    mixed: { 0: 'a', key: 1, 1: 'b' },
    casts: { 5: 'five', '05': 'oh-five', 1: 'float', '': 'null' },
    overwritten: { x: 2 },
    empty: [],
    unicode: 'ü',
  });
});

test("the reader and PHP's own json_encode agree on every literal form and on eduVPN-shaped files", async (t) => {
  for (const text of [LITERALS_PHP, PORTAL_CONFIG_PHP, NODE_CONFIG_PHP]) {
    const file = phpFile(t, text);
    assert.deepEqual(evaluateConfigPhp(text, 'config.php'), await phpJsonOf(file));
  }
});

test('the JSON that php -r makes of a config.php is read as it is, told by its name or its first character', async (t) => {
  const json = JSON.stringify(await phpJsonOf(phpFile(t, PORTAL_CONFIG_PHP)));
  const expected = evaluateConfigPhp(PORTAL_CONFIG_PHP, 'config.php');
  assert.deepEqual(readConfigPhp(json, 'config.json'), expected);
  assert.deepEqual(readConfigPhp(`\n  ${json}`, 'exported'), expected);
  assert.deepEqual(readConfigPhp(PORTAL_CONFIG_PHP, 'config.php'), expected);
  assert.throws(() => readConfigPhp('{"a": ', 'config.json'), /^Error: config\.json: not valid JSON \(/);
});

test('a constant, a call, a variable or an interpolation is refused with its line and the JSON route', () => {
  const cases: [string, string][] = [
    [
      "<?php\nreturn [\n  'permissionAttribute' => RADIUS_REPLY_MESSAGE,\n];\n",
      'config.php:3: the constant RADIUS_REPLY_MESSAGE',
    ],
    ["<?php\nreturn [\n\n  'dir' => getenv('HOME'),\n];\n", 'config.php:4: a call of getenv()'],
    ["<?php\n$base = '/etc';\nreturn [];\n", 'config.php:2: a statement (expressionstatement) before the "return"'],
    ["<?php\nreturn ['dir' => $base];\n", 'config.php:2: the variable $base'],
    ['<?php\nreturn [\n  \'x\' => "in $base",\n];\n', 'config.php:3: the variable $base'],
    ["<?php\nreturn ['x' => Foo::BAR];\n", 'config.php:2: a class constant'],
    ["<?php\nreturn ['x' => 1 + 2];\n", 'config.php:2: the operator "+"'],
    ["<?php\nreturn ['x' => 'a' . 1];\n", 'config.php:2: concatenating something other than two strings'],
    ["<?php\nreturn ['x' => __DIR__];\n", 'config.php:2: a magic constant'],
  ];
  for (const [text, start] of cases) {
    const message = refusal(text);
    assert.ok(message.startsWith(start), `${JSON.stringify(message)} should start with ${JSON.stringify(start)}`);
    assert.match(message, /needs PHP to evaluate; only literals are read here: turn it into JSON .*php -r/);
  }
});

test('a file that does not parse, or returns nothing, is refused saying so', () => {
  assert.match(refusal("<?php\nreturn [\n  'x' => ,\n];\n"), /^config\.php:3: not PHP that can be read: /);
  assert.equal(refusal('<?php\n// nothing\n'), 'config.php: the file does not return an array (no "return [...]")');
});
