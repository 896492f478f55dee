// `vpn-portal import eduvpn-config FILE [--node-config FILE]... [--output-dir DIR] [--force]`:
// an eduVPN config.php (or the JSON php -r makes of it) becomes portal.json and one node.N.json
// per node, checked by the same loaders the portal and the agent start with, so what it writes
// loads; every option without a counterpart is printed with what to do about it.
import { constants } from 'node:fs';
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { NodeAgentConfigError, parseNodeAgentConfig } from '../agent/config.js';
import { ConfigError, resolvePortalConfig } from '../config/load.js';
import { ConfigPhpError, readConfigPhp } from '../eduvpn/config-php.js';
import { ConversionError } from '../eduvpn/conversion-error.js';
import { convertNodeConfig, nodeConfigWithoutFile, nodeNumberOf } from '../eduvpn/node-options.js';
import { type ConvertedFile, convertPortalConfig } from '../eduvpn/portal-options.js';
import { OptionError, parseOptions } from './options.js';

/** One file to write: its name in the output folder, its document and its notes. */
interface OutputFile extends ConvertedFile {
  readonly name: string;
}

/** The input cannot be converted, or the output is in the way: exit 1 with this message. */
class ImportRefused extends Error {}

/** Runs the command; returns the exit code (0 written, 1 not converted). Usage mistakes throw OptionError. */
export async function runImportEduVpnConfig(
  args: readonly string[],
  print: (line: string) => void,
  printError: (line: string) => void,
): Promise<number> {
  const { values, positionals } = parseOptions({
    args: [...args],
    options: {
      'node-config': { type: 'string', multiple: true },
      'output-dir': { type: 'string' },
      force: { type: 'boolean' },
    },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length !== 1) throw new OptionError("import eduvpn-config needs one FILE: the portal's config.php");
  const outputDir = path.resolve(values['output-dir'] ?? '.');
  try {
    const files = await convertFiles(positionals[0] as string, values['node-config'] ?? []);
    checkLoads(files, outputDir);
    await writeFiles(files, outputDir, values.force === true);
    for (const file of files) {
      print(`${path.join(outputDir, file.name)}:`);
      for (const note of file.notes) print(`  ${note}`);
    }
    return 0;
  } catch (error) {
    if (!(error instanceof ImportRefused)) throw error;
    printError(error.message);
    return 1;
  }
}

/** portal.json, then node.N.json for every node the profiles or the node config files name, by number. */
async function convertFiles(portalFile: string, nodeFiles: readonly string[]): Promise<OutputFile[]> {
  const portalText = await readInput(portalFile);
  const nodeTexts = await Promise.all(nodeFiles.map(readInput));
  const portal = refusingOnError(portalFile, () => convertPortalConfig(readConfigPhp(portalText, portalFile)));
  const nodes = new Map<number, OutputFile>();
  for (const [index, nodeFile] of nodeFiles.entries()) {
    const node = refusingOnError(nodeFile, () => {
      const config = readConfigPhp(nodeTexts[index] as string, nodeFile);
      const nodeNumber = nodeNumberOf(config);
      if (nodes.has(nodeNumber))
        throw new ConversionError(`nodeNumber ${nodeNumber}: another --node-config is for the same node`);
      const converted = convertNodeConfig(config, portal.document);
      const unused = portal.nodeNumbers.includes(nodeNumber)
        ? []
        : [`no profile in ${portalFile} runs on node ${nodeNumber}`];
      const notes = [`from ${nodeFile}`, ...unused, ...converted.notes];
      return { nodeNumber, file: { name: `node.${nodeNumber}.json`, document: converted.document, notes } };
    });
    nodes.set(node.nodeNumber, node.file);
  }
  for (const nodeNumber of portal.nodeNumbers)
    if (!nodes.has(nodeNumber))
      nodes.set(nodeNumber, { name: `node.${nodeNumber}.json`, ...nodeConfigWithoutFile(nodeNumber, portal.document) });
  const byNumber = [...nodes.entries()].sort(([a], [b]) => a - b).map(([, file]) => file);
  return [{ name: 'portal.json', document: portal.document, notes: portal.notes }, ...byNumber];
}

/** A file that cannot be read is refused like one that cannot be converted, before anything is written. */
async function readInput(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new ImportRefused(`${file}: cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
}

function refusingOnError<T>(file: string, convert: () => T): T {
  try {
    return convert();
  } catch (error) {
    if (error instanceof ConfigPhpError) throw new ImportRefused(error.message);
    if (error instanceof ConversionError) throw new ImportRefused(`${file}: ${error.message}`);
    throw error;
  }
}

/** What the portal and the agent would say of the files; written files must start as they are. */
function checkLoads(files: readonly OutputFile[], outputDir: string): void {
  const problems: string[] = [];
  for (const file of files) {
    const where = path.join(outputDir, file.name);
    try {
      if (file.name === 'portal.json') resolvePortalConfig(file.document, where, outputDir);
      else parseNodeAgentConfig(file.document, where);
    } catch (error) {
      if (!(error instanceof ConfigError) && !(error instanceof NodeAgentConfigError)) throw error;
      problems.push(error.message);
    }
  }
  if (problems.length > 0)
    throw new ImportRefused(
      `nothing written: the converted files would not load as they are; fix the input (config.php, or the JSON of it) and run again:\n${problems.join('\n')}`,
    );
}

/** Never over an existing file unless forced; portal.json may hold a database password, so every file is 0600. */
async function writeFiles(files: readonly OutputFile[], outputDir: string, force: boolean): Promise<void> {
  if (!force) {
    const existing: string[] = [];
    for (const file of files)
      if (await exists(path.join(outputDir, file.name))) existing.push(path.join(outputDir, file.name));
    if (existing.length > 0)
      throw new ImportRefused(
        `nothing written: ${existing.join(', ')} already exist${existing.length === 1 ? 's' : ''} (--force replaces them)`,
      );
  }
  await mkdir(outputDir, { recursive: true, mode: 0o700 });
  for (const file of files)
    await writeFile(path.join(outputDir, file.name), `${JSON.stringify(file.document, null, 2)}\n`, { mode: 0o600 });
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file, constants.F_OK);
    return true;
  } catch {
    return false;
  }
}
