// The HTML of a shared link: a shell that carries the shared data as inert JSON and loads the page's
// scripts from this server; `page/shared.js` draws it. Nothing here runs a script inline, so the
// Content-Security-Policy allows this origin's scripts only.
import { assetUrl } from './assets.js';

/**
 * Scripts, styles and requests of this origin only; no inline script or style, no plugins, no base
 * rewriting, forms post here. The page may be embedded in any site's frame, as PostHog's shared pages are.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "object-src 'none'",
  'frame-ancestors *',
].join('; ');

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);

/**
 * JSON inside `<script type="application/json">`: `<` written as `\u003c`, so no text in it can close
 * the element; U+2028/2029 escaped as well (harmless in JSON, not in every reader of it).
 */
const inertJson = (value: unknown) =>
  JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');

const SCRIPTS = ['chart.umd.min.js', 'marked.umd.js', 'purify.min.js', 'shared.js'];

/** What every page's head holds: no indexing, no icon request, the title and the style sheet. */
const headOf = (title: string) => `<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<link rel="icon" href="data:,">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${assetUrl('shared.css')}">`;

/** The page of a share; `data` is what `page/shared.js` reads (PostHog's exported data, or an unlock request). */
export function sharedPage(title: string, description: string, data: unknown): string {
  const scripts = SCRIPTS.map((name) => `<script src="${assetUrl(name)}" defer></script>`).join('\n');
  return `<!doctype html>
<html lang="en">
<head>
${headOf(title)}
<meta name="description" content="${escapeHtml(description)}">
<script type="application/json" id="shared-data">${inertJson(data)}</script>
${scripts}
</head>
<body>
<main id="app" aria-live="polite"><noscript>This page needs JavaScript to draw its charts.</noscript></main>
</body>
</html>
`;
}

/** A page saying why a link shows nothing (PostHog's shared_resource_404.html, or another refusal). */
export function errorPage(status: number, detail: string): string {
  const title = status === 404 ? 'This link is not available' : 'This page cannot be shown';
  const why =
    status === 404 ? 'It may have been switched off, replaced by a new link, or never existed.' : escapeHtml(detail);
  return `<!doctype html>
<html lang="en">
<head>
${headOf(title)}
</head>
<body>
<main id="app"><section class="notice"><h1>${escapeHtml(title)}</h1><p>${why}</p></section></main>
</body>
</html>
`;
}
