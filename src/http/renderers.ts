import type { FastifyReply, FastifyRequest } from 'fastify';
import { renderCsvRows } from '../core/csv.js';

/**
 * The renderers PostHog's viewsets add to JSON, named by the contract's `x-renderer` on an operation's
 * `format` parameter: `event-stream` (dashboards' ServerSentEventRenderer, format `txt`), `csv`
 * (insights' CSVRenderer: the whole answer is one row) and `paginated-csv` (persons' and events'
 * PaginatedCSVRenderer: the rows are a page's `results`).
 */
export type Renderer = 'event-stream' | 'csv' | 'paginated-csv';
export type Format = 'json' | 'csv' | 'txt';

const RENDERERS: Record<Renderer, { format: Format; mediaType: string }> = {
  'event-stream': { format: 'txt', mediaType: 'text/event-stream' },
  csv: { format: 'csv', mediaType: 'text/csv' },
  'paginated-csv': { format: 'csv', mediaType: 'text/csv' },
};

export const isRenderer = (name: unknown): name is Renderer => typeof name === 'string' && name in RENDERERS;

export const rendererMediaType = (renderer: Renderer): string => RENDERERS[renderer].mediaType;

/** How specific a media range is, as Django REST framework ranks them (q-values play no part). */
function precedence(range: string): number {
  const [type = '', ...params] = range.split(';').map((s) => s.trim());
  const [main, sub] = type.split('/');
  if (main === '*') return 0;
  if (sub === '*') return 1;
  return params.some((p) => !/^q=/i.test(p)) ? 3 : 2;
}

function matches(mediaType: string, range: string): boolean {
  const [main, sub] = (range.split(';')[0] ?? '').trim().toLowerCase().split('/');
  const [m, s] = mediaType.split('/');
  return (main === '*' || main === m) && (sub === '*' || sub === s);
}

/**
 * DRF's content negotiation between JSON and the route's renderer: `?format=` decides; otherwise the most
 * specific ranges of the Accept header are tried first, JSON before the other renderer within one rank.
 * Where DRF answers 406 (nothing acceptable, or a `format` the Accept header excludes) this answers JSON
 * or the format asked for.
 */
export function negotiate(renderer: Renderer, format: string | undefined, accept: string | undefined): Format {
  const { format: other, mediaType } = RENDERERS[renderer];
  if (format === other || format === 'json') return format;
  const ranges = (accept ?? '').split(',').filter((r) => r.trim());
  for (const rank of [3, 2, 1, 0]) {
    const tier = ranges.filter((r) => precedence(r) === rank);
    if (tier.some((r) => matches('application/json', r))) return 'json';
    if (tier.some((r) => matches(mediaType, r))) return other;
  }
  return 'json';
}

function rendererOf(req: FastifyRequest): Renderer | undefined {
  const renderer = (req.routeOptions.config as { renderer?: unknown } | undefined)?.renderer;
  return isRenderer(renderer) ? renderer : undefined;
}

/** The format of the answer: `json` unless the route has another renderer and the request asked for it. */
export function answerFormat(req: FastifyRequest): Format {
  const renderer = rendererOf(req);
  if (!renderer) return 'json';
  return negotiate(renderer, (req.query as { format?: string } | undefined)?.format, req.headers.accept);
}

/** The answer's JSON as the renderer writes it. */
async function render(renderer: Renderer, data: unknown): Promise<string> {
  if (renderer === 'event-stream') return `data: ${JSON.stringify(data)}\n\n`;
  if (Array.isArray(data)) return renderCsvRows(data);
  const page = data as { results?: unknown } | null;
  // PostHog's paginated renderer writes nothing for an answer that is not a page; one row says more.
  if (renderer === 'paginated-csv' && Array.isArray(page?.results)) return renderCsvRows(page.results);
  return renderCsvRows([data]);
}

/**
 * onSend for a route with a renderer: a successful JSON answer is re-rendered when the request asked for the
 * other format, as DRF renders a view's data with the negotiated renderer. Errors stay JSON (one error shape).
 */
export async function renderAnswer(req: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  const renderer = rendererOf(req);
  if (!renderer || reply.statusCode < 200 || reply.statusCode > 299) return payload;
  if (!/^application\/json/i.test(String(reply.getHeader('content-type') ?? ''))) return payload;
  if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload;
  if (answerFormat(req) === 'json') return payload;
  const text = await render(renderer, JSON.parse(payload.toString()));
  reply.header('content-type', `${RENDERERS[renderer].mediaType}; charset=utf-8`);
  return text;
}
