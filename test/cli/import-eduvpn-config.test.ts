// `vpn-portal import eduvpn-config`, run as an administrator runs it: the files it writes load in
// the portal and the agent, it never replaces a file unasked, and its exit codes tell a script
// whether the conversion happened (0), could not (1) or was asked wrongly (2).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { loadNodeAgentConfig } from '../../src/agent/config.js';
import { loadPortalConfig } from '../../src/config/load.js';
import { NODE_CONFIG_PHP, PORTAL_CONFIG_PHP } from '../support/eduvpn-config-php.js';
import { runCli } from '../support/portal-process.js';

/** A folder with eduVPN's portal config.php and node 1's config.php, and an empty output folder. */
function eduVpnFiles(t: { after: (fn: () => void) => void }): {
  dir: string;
  portal: string;
  node: string;
  out: string;
} {
  const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-import-config-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const portal = path.join(dir, 'config.php');
  const node = path.join(dir, 'node-config.php');
  writeFileSync(portal, PORTAL_CONFIG_PHP);
  writeFileSync(node, NODE_CONFIG_PHP);
  return { dir, portal, node, out: path.join(dir, 'out') };
}

test('the command writes portal.json and a node.N.json per node that the portal and the agent load, and prints the notes', async (t) => {
  const { portal, node, out } = eduVpnFiles(t);
  const result = await runCli(['import', 'eduvpn-config', portal, '--node-config', node, '--output-dir', out]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, '');
  const config = loadPortalConfig(path.join(out, 'portal.json'));
  assert.deepEqual(
    config.profiles.map((profile) => profile.profileId),
    ['employees', 'guests'],
  );
  const node0 = await loadNodeAgentConfig(path.join(out, 'node.0.json'));
  const node1 = await loadNodeAgentConfig(path.join(out, 'node.1.json'));
  assert.equal(node0.nodeNumber, 0);
  assert.equal(node1.apiUrl.href, 'https://portal.example.org/vpn-user-portal/node-api.php');
  assert.equal(node1.openVpn.preferAes, 'yes');
  assert.equal(statSync(path.join(out, 'portal.json')).mode & 0o777, 0o600, 'portal.json holds the database password');
  assert.equal(statSync(out).mode & 0o777, 0o700);
  const lines = result.stdout.split('\n');
  assert.equal(lines[0], `${path.join(out, 'portal.json')}:`);
  assert.ok(lines.includes(`${path.join(out, 'node.0.json')}:`));
  assert.ok(lines.includes(`  from ${node}`));
  assert.ok(
    lines.includes(
      '  "authModule": an eduVPN option not used here: the user portal\'s login (this portal has no user portal)',
    ),
  );
  assert.ok(lines.some((line) => line.startsWith('  "Db": an eduVPN option; here it is "database" (')));
  assert.ok(!result.stdout.includes('s3cret'), 'the database password is printed');
});

test('an existing file is replaced only with --force, and without it nothing is written', async (t) => {
  const { portal, out } = eduVpnFiles(t);
  assert.equal((await runCli(['import', 'eduvpn-config', portal, '--output-dir', out])).code, 0);
  writeFileSync(path.join(out, 'node.1.json'), 'kept\n');
  rmSync(path.join(out, 'portal.json'));
  const refused = await runCli(['import', 'eduvpn-config', portal, '--output-dir', out]);
  assert.equal(refused.code, 1);
  assert.equal(
    refused.stderr,
    `nothing written: ${path.join(out, 'node.0.json')}, ${path.join(out, 'node.1.json')} already exist (--force replaces them)\n`,
  );
  assert.equal(existsSync(path.join(out, 'portal.json')), false);
  assert.equal(readFileSync(path.join(out, 'node.1.json'), 'utf8'), 'kept\n');
  const forced = await runCli(['import', 'eduvpn-config', portal, '--output-dir', out, '--force']);
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal(JSON.parse(readFileSync(path.join(out, 'node.1.json'), 'utf8')).nodeNumber, 1);
});

test('the JSON made by php -r is converted alike, into the current folder by default', async (t) => {
  const { dir, portal } = eduVpnFiles(t);
  const json = path.join(dir, 'config.json');
  const converted = await runCli(['import', 'eduvpn-config', portal, '--output-dir', path.join(dir, 'from-php')]);
  assert.equal(converted.code, 0, converted.stderr);
  // The JSON route's input, written as php -r would: the same options, as JSON.
  writeFileSync(
    json,
    JSON.stringify({
      ProfileList: [
        {
          profileId: 'office',
          displayName: 'Office',
          hostName: 'vpn.example.org',
          wRangeFour: '10.50.0.0/24',
          wRangeSix: 'fd50::/64',
        },
      ],
      styleName: 'eduVPN',
    }),
  );
  const result = await runCli(['import', 'eduvpn-config', json], { cwd: dir });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(
    loadPortalConfig(path.join(dir, 'portal.json')).profiles.map((profile) => profile.profileId),
    ['office'],
  );
  assert.equal((await loadNodeAgentConfig(path.join(dir, 'node.0.json'))).nodeNumber, 0);
});

test('input that cannot be converted exits 1 with the reason and its line, and writes nothing', async (t) => {
  const { dir, portal, node, out } = eduVpnFiles(t);
  const constant = path.join(dir, 'radius.php');
  writeFileSync(
    constant,
    "<?php\nreturn [\n  'ProfileList' => [],\n  'RadiusAuthModule' => ['permissionAttribute' => RADIUS_REPLY_MESSAGE],\n];\n",
  );
  const refused = await runCli(['import', 'eduvpn-config', constant, '--output-dir', out]);
  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    new RegExp(
      `^${constant.replaceAll('.', '\\.')}:4: the constant RADIUS_REPLY_MESSAGE needs PHP to evaluate; .*php -r`,
    ),
  );
  assert.equal(existsSync(out), false);

  const overlapping = path.join(dir, 'overlap.php');
  writeFileSync(
    overlapping,
    `<?php return ['ProfileList' => [
      ['profileId' => 'a', 'displayName' => 'A', 'hostName' => 'h', 'wRangeFour' => '10.1.0.0/24', 'wRangeSix' => 'fd01::/64'],
      ['profileId' => 'b', 'displayName' => 'B', 'hostName' => 'h', 'wRangeFour' => '10.1.0.0/25', 'wRangeSix' => 'fd02::/64'],
    ]];`,
  );
  const notLoading = await runCli(['import', 'eduvpn-config', overlapping, '--output-dir', out]);
  assert.equal(notLoading.code, 1);
  assert.match(
    notLoading.stderr,
    /^nothing written: the converted files would not load as they are; .*\n.*portal\.json: ProfileList/,
  );
  assert.equal(existsSync(out), false);

  const twice = await runCli([
    'import',
    'eduvpn-config',
    portal,
    '--node-config',
    node,
    '--node-config',
    node,
    '--output-dir',
    out,
  ]);
  assert.equal(twice.code, 1);
  assert.equal(twice.stderr, `${node}: nodeNumber 1: another --node-config is for the same node\n`);
  assert.equal(existsSync(out), false);

  const missing = await runCli(['import', 'eduvpn-config', path.join(dir, 'nope.php')]);
  assert.equal(missing.code, 1);
  assert.equal(missing.stderr, `${path.join(dir, 'nope.php')}: cannot read it (ENOENT)\n`);
});

test('usage mistakes exit 2 with the usage of import', async (t) => {
  const { portal } = eduVpnFiles(t);
  for (const args of [
    ['import', 'eduvpn-config'],
    ['import', 'eduvpn-config', portal, portal],
    ['import', 'eduvpn-config', portal, '--outputdir', 'x'],
    ['import', 'eduvpn-confg', portal],
  ]) {
    const result = await runCli(args);
    assert.equal(result.code, 2, args.join(' '));
    assert.match(
      result.stderr,
      /\nusage: vpn-portal import eduvpn .*\n(.*\n)*\s+vpn-portal import eduvpn-config FILE/,
      args.join(' '),
    );
  }
});
