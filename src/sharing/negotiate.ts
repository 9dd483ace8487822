/** The weight an Accept header gives each of `types` (its best matching entry; `*\/*` matches none of them). */
function weightOf(accept: string, types: string[]): number {
  let best = 0;
  for (const entry of accept.split(',')) {
    const [type, ...params] = entry.trim().toLowerCase().split(';');
    if (!type || !types.includes(type.trim())) continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const weight = q ? Number(q.slice(2)) : 1;
    if (Number.isFinite(weight)) best = Math.max(best, weight);
  }
  return best;
}

/**
 * Whether a request to `/shared/<token>` is a person's browser: it names HTML, and prefers it to JSON.
 * Anything else (JSON, `*\/*`, no Accept header at all) gets JSON, so that scripts keep reading JSON there.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  const html = weightOf(accept, ['text/html', 'application/xhtml+xml']);
  return html > 0 && html > weightOf(accept, ['application/json', 'application/*']);
}
