/**
 * A function's filters as one HogQL expression over PostHog's filter globals (`event`, `properties`,
 * `person.properties`, `elements_chain`), as PostHog's compile_filters_expr builds it: the events (each with
 * its own properties) are OR'ed, the top-level properties AND'ed to them. No events means every event.
 */
type Json = Record<string, unknown>;

const str = (v: unknown) => `'${String(v).replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const ident = (v: string) => `\`${v.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
const literal = (v: unknown) => (typeof v === 'number' || typeof v === 'boolean' ? String(v) : str(v));

function field(filter: Json): string {
  const key = String(filter.key ?? '');
  if (!key) throw new Error('A property filter needs a key.');
  switch (filter.type ?? 'event') {
    case 'event':
      return `properties.${ident(key)}`;
    case 'person':
      return `person.properties.${ident(key)}`;
    case 'hogql':
      return `(${key})`;
    default:
      throw new Error(`Property filters of type "${String(filter.type)}" are not supported.`);
  }
}

function propertyExpr(filter: Json): string {
  const f = field(filter);
  if (filter.type === 'hogql') return f;
  const op = String(filter.operator ?? 'exact');
  const values = Array.isArray(filter.value) ? filter.value : [filter.value];
  const any = (make: (v: unknown) => string) =>
    values.length === 1 ? make(values[0]) : `(${values.map(make).join(' or ')})`;
  const all = (make: (v: unknown) => string) =>
    values.length === 1 ? make(values[0]) : `(${values.map(make).join(' and ')})`;
  switch (op) {
    case 'exact':
      return any((v) => `${f} = ${literal(v)}`);
    case 'is_not':
      return all((v) => `${f} != ${literal(v)}`);
    case 'icontains':
      return any((v) => `${f} ilike ${str(`%${String(v)}%`)}`);
    case 'not_icontains':
      return all((v) => `not(${f} ilike ${str(`%${String(v)}%`)})`);
    case 'regex':
      return any((v) => `${f} =~ ${str(v)}`);
    case 'not_regex':
      return all((v) => `${f} !~ ${str(v)}`);
    case 'gt':
      return `toFloat(${f}) > ${Number(values[0])}`;
    case 'lt':
      return `toFloat(${f}) < ${Number(values[0])}`;
    case 'gte':
      return `toFloat(${f}) >= ${Number(values[0])}`;
    case 'lte':
      return `toFloat(${f}) <= ${Number(values[0])}`;
    case 'is_set':
      return `${f} is not null`;
    case 'is_not_set':
      return `${f} is null`;
    default:
      throw new Error(`The operator "${op}" is not supported in filters.`);
  }
}

const list = (v: unknown): Json[] => (Array.isArray(v) ? v.filter((x): x is Json => !!x && typeof x === 'object') : []);
const and = (parts: string[]) => (parts.length ? parts.map((p) => `(${p})`).join(' and ') : 'true');

export function filtersExpression(filters: Json): string {
  if (list(filters.actions).length) throw new Error('Action filters are not supported here.');
  const events = list(filters.events).map((e) => {
    const parts = list(e.properties).map(propertyExpr);
    // An event filter without an id (PostHog's "All events") matches every event name.
    if (e.id !== null && e.id !== undefined) parts.unshift(`event = ${str(e.id)}`);
    return and(parts);
  });
  const parts = list(filters.properties).map(propertyExpr);
  if (events.length) parts.unshift(events.map((e) => `(${e})`).join(' or '));
  return and(parts);
}
