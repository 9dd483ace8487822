import type { components } from '../../generated/api.js';
import { gridPosition, type LayoutSize } from './serialize.js';

type Dashboard = components['schemas']['Dashboard'];

/** PostHog's stream_tiles puts this many tiles in the metadata event so the first row shows at once. */
const INITIAL_TILES = 2;
/** Write-only inputs that PostHog's metadata serializer does not carry. */
const WRITE_ONLY = ['use_template', 'use_dashboard', 'delete_insights'] as const;

function event(data: unknown): string {
  return `data: ${JSON.stringify(data)}\n\n`;
}

/**
 * PostHog's server-sent events for a dashboard: metadata with the first tiles, one event per further
 * tile in reading order of the chosen grid, then `complete`. Text tiles need no rendering, so the whole
 * stream is ready at once.
 */
export function streamTiles(dashboard: Dashboard, size: LayoutSize): string {
  const tiles = [...dashboard.tiles].sort((a, b) => {
    const [ay, ax] = gridPosition(a.layouts, size);
    const [by, bx] = gridPosition(b.layouts, size);
    return ay - by || ax - bx;
  });
  const ordered = tiles.map((tile, order) => ({ ...tile, order }));
  const metadata: Record<string, unknown> = { ...dashboard, tiles: ordered.slice(0, INITIAL_TILES) };
  for (const key of WRITE_ONLY) delete metadata[key];
  return [
    event({ type: 'metadata', dashboard: metadata }),
    ...ordered.slice(INITIAL_TILES).map((tile) => event({ type: 'tile', order: tile.order, tile })),
    event({ type: 'complete' }),
  ].join('');
}
