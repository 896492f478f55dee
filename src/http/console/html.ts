// HTML for the admin console, escaped by construction: `html` is a tagged template whose every
// interpolated value is escaped unless it is itself Html made by `html` (or `raw` for the rare
// fixed markup). A user id such as `<img src=x onerror=alert(1)>` can only ever show as text.

export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

type Interpolated = Html | string | number | boolean | null | undefined | readonly Interpolated[];

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (character) => `&#${character.charCodeAt(0)};`);
}

function render(value: Interpolated): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return (value as readonly Interpolated[]).map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Interpolated[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, index) => {
    out += render(value) + (strings[index + 1] ?? '');
  });
  return new Html(out);
}

/** JSON for a `<script type="application/json">` data island: `<` escaped so no text can close the element. */
export function jsonIsland(id: string, value: unknown): Html {
  const json = JSON.stringify(value).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
  return new Html(`<script type="application/json" id="${escapeHtml(id)}">${json}</script>`);
}
