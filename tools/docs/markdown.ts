// Small Markdown helpers shared by the generated reference pages and the docs tests: a table
// row with its cells escaped, and GitHub's heading anchors, so links can be checked offline.

/** One table row; a `|` inside a cell would end the cell, and a line break the row. */
export function tableRow(cells: readonly string[]): string {
  return `| ${cells.map((cell) => cell.replaceAll('|', '\\|').replaceAll('\n', ' ')).join(' | ')} |`;
}

export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [tableRow(header), `|${header.map(() => '---').join('|')}|`, ...rows.map(tableRow)].join('\n');
}

/** Inline code that survives backticks in the text. */
export function code(text: string): string {
  return text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``;
}

/**
 * The anchors GitHub gives a page's headings: lower case, punctuation dropped (letters, digits,
 * spaces, `-` and `_` stay), spaces made `-`; a repeated anchor gets `-1`, `-2`, … Headings in
 * fenced code blocks are not headings.
 */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of linesOutsideFences(markdown)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = slugOf(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** The lines that are not inside a fenced code block (nor its fences): where headings and links are. */
export function linesOutsideFences(markdown: string): string[] {
  const lines: string[] = [];
  let fence: string | null = null;
  for (const line of markdown.split('\n')) {
    const fenceMark = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fenceMark !== undefined) {
      if (fence === null) fence = fenceMark[0] ?? null;
      else if (fenceMark[0] === fence) fence = null;
    } else if (fence === null) {
      lines.push(line);
    }
  }
  return lines;
}

export function slugOf(heading: string): string {
  const text = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text only
    .replace(/<[^>]+>/g, '');
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}
