// What a SCIM filter (RFC 7644 section 3.4.2.2) in a PATCH path must look like before scimmy may
// read it. scimmy's filter parser cannot be given just any text: it multiplies groups out with
// each other and with the comparisons beside them (seven `(a or b)` groups and twenty comparisons
// filled a 4 GB heap), its string pattern backtracks exponentially over an unclosed string of
// backslashes (forty took 5 seconds, each two more doubling it), and it reads `not (a or b)` as
// `not a or not b`. So a filter is read here first, in one pass, into the same tokens scimmy's
// lexer would make, and only shapes it reads right and in time linear in their length pass: no
// parentheses but `not (` one comparison `)`, at most one bracketed filter, every string closed,
// no `\"` and no bracket or parenthesis inside a string, escaped or not (scimmy's lexer would end
// a group there), no " and " or " or " in a string inside `not (…)` (scimmy rewrites them),
// no word that scimmy would split into a keyword and more (`or$x`, `trueor`), and no `and`/`or`
// with nothing on one side (which scimmy reads as not there).

/**
 * The outline of a path: how many comparisons its filter holds (none without brackets), or why
 * it is refused. scimmy's time grows with the square of a filter's comparisons (100 joined by
 * `or`: some 6 ms, read more than once per operation), so the caller bounds their sum.
 */
export type FilterShape =
  | { readonly ok: true; readonly comparisons: number }
  | { readonly ok: false; readonly why: string };

/** 'phrase': a string holding " and " or " or ", which scimmy rewrites inside a `not (…)`. */
type Token = '(' | ')' | '[' | ']' | 'and' | 'or' | 'not' | 'phrase' | 'other';

/** scimmy negates a group by rewriting its text, strings too: " and " becomes " and not ". */
const JOINED_PHRASE = /\s(?:and|or)\s/i;

/** A keyword scimmy's lexer takes at the start of a word when any but a letter or digit follows. */
const SPLIT_KEYWORD = /^(?:and|or|not|eq|ne|co|sw|ew|gt|lt|ge|le|pr|np)[^a-z0-9]/i;
/** scimmy's lexer takes these at the start of a word whatever follows. */
const SPLIT_LITERAL = /^(?:true|false|null)./i;

/** A PATCH path (its filter is between its brackets), read without regard to case. */
export function filterShape(text: string): FilterShape {
  let previous: Token | null = null;
  let negation: 'none' | 'open' = 'none';
  let brackets = 0;
  let joins = 0;
  try {
    for (const token of tokens(text)) {
      if (
        (token === 'and' || token === 'or') &&
        (previous === null ||
          previous === '(' ||
          previous === '[' ||
          previous === 'and' ||
          previous === 'or' ||
          previous === 'not')
      )
        return refused(`"${token}" must join two comparisons`);
      if ((token === ')' || token === ']') && (previous === 'and' || previous === 'or' || previous === 'not'))
        return refused(`"${previous}" must join two comparisons`);
      if (negation !== 'none' && token === 'phrase')
        return refused('a value inside "not (…)" may not hold " and " or " or "');
      if (negation !== 'none' && token !== ')' && token !== 'other')
        return refused('"not (…)" may hold one comparison only; write "not" before each comparison');
      if (token === '(') {
        if (previous !== 'not')
          return refused(
            'parentheses may only hold the one comparison of a "not"; write the filter without them ("and" binds before "or")',
          );
        negation = 'open';
      } else if (token === ')') {
        if (negation === 'none') return refused('a ")" that no "(" opened');
        negation = 'none';
      } else if (token === '[' || token === ']') {
        brackets += 1;
        if (brackets > 2 || (token === '[') !== (brackets === 1))
          return refused('a path may hold one filter in brackets, and a filter none');
      } else if (token === 'and' || token === 'or') joins += 1;
      previous = token;
    }
  } catch (error) {
    if (error instanceof UnreadableFilter) return refused(error.message);
    throw error;
  }
  if (previous === 'and' || previous === 'or' || previous === 'not')
    return refused(`the filter ends with "${previous}"`);
  if (negation !== 'none') return refused('a "(" that is never closed');
  return { ok: true, comparisons: brackets === 0 ? 0 : joins + 1 };
}

class UnreadableFilter extends Error {}

function refused(why: string): FilterShape {
  return { ok: false, why };
}

/** The filter's tokens: a string (closed, escapes skipped) or a word other than and/or/not is 'other'. */
function* tokens(text: string): Generator<Token> {
  let index = 0;
  while (index < text.length) {
    const character = text[index] as string;
    if (isControl(character)) throw new UnreadableFilter('a control character');
    if (character === '(' || character === ')' || character === '[' || character === ']') {
      yield character;
      index += 1;
    } else if (/\s/.test(character)) index += 1;
    else if (character === '"') {
      const end = afterString(text, index);
      yield JOINED_PHRASE.test(text.slice(index, end)) ? 'phrase' : 'other';
      index = end;
    } else {
      const start = index;
      while (index < text.length && !/[\s()[\]"]/.test(text[index] as string) && !isControl(text[index] as string))
        index += 1;
      yield wordToken(text.slice(start, index));
    }
  }
}

/** Where the string opening at `start` ends; refused if scimmy's lexer could read it otherwise. */
function afterString(text: string, start: number): number {
  let index = start + 1;
  for (;;) {
    const character = text[index];
    if (character === undefined) throw new UnreadableFilter('a string that is never closed');
    if (character === '"') return index + 1;
    checkedStringCharacter(character);
    if (character === '\\') {
      const escaped = text[index + 1];
      if (escaped === undefined) throw new UnreadableFilter('a string that is never closed');
      if (escaped === '"') throw new UnreadableFilter('a value may not hold a quote (\\") here');
      checkedStringCharacter(escaped);
      index += 2;
    } else index += 1;
  }
}

/** scimmy's lexer ends a group or a bracketed filter at its first `)` or `]`, inside a string too. */
function checkedStringCharacter(character: string): void {
  if (isControl(character)) throw new UnreadableFilter('a control character in a string');
  if ('()[]'.includes(character)) throw new UnreadableFilter(`a value may not hold "${character}" here`);
}

function wordToken(word: string): Token {
  const lower = word.toLowerCase();
  if (lower === 'and' || lower === 'or' || lower === 'not') return lower;
  if (SPLIT_KEYWORD.test(word) || SPLIT_LITERAL.test(word))
    throw new UnreadableFilter(`"${word}" reads as a keyword and more; put a space after the keyword`);
  return 'other';
}

function isControl(character: string): boolean {
  const code = character.charCodeAt(0);
  return code < 0x20 || code === 0x7f;
}
