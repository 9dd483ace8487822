/** The units of `INTERVAL n unit` and of toInterval<Unit>(n). */
export const INTERVAL_UNITS = ['second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year'] as const;
