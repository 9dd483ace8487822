/**
 * Autocaptured elements, in PostHog's `elements_chain` text form: elements joined by `;`, each
 * `tag.class1.class2:key="value"key2="value2"` with `"` escaped as `\"`, innermost element first.
 */
export interface Element {
  text: string | null;
  tag_name: string | null;
  attr_class: string[] | null;
  href: string | null;
  attr_id: string | null;
  nth_child: number | null;
  nth_of_type: number | null;
  attributes: Record<string, string>;
  order: number | null;
}

const escapeQuotes = (s: string) => s.replace(/"/g, '\\"');

const str = (v: unknown): string | undefined =>
  v === undefined || v === null || v === '' ? undefined : typeof v === 'string' ? v : String(v);

function classesOf(el: Record<string, unknown>): string[] {
  const raw = el.attr__class ?? el.classes;
  const list = Array.isArray(raw) ? raw.map(String) : typeof raw === 'string' ? raw.split(/\s+/) : [];
  return list.filter(Boolean);
}

/** posthog-js's `$elements` property (objects with `tag_name`, `$el_text`, `attr__*`, ...) as a chain. */
export function elementsToChain(elements: unknown[]): string {
  return elements
    .filter((e): e is Record<string, unknown> => typeof e === 'object' && e !== null && !Array.isArray(e))
    .map((el) => {
      let out = str(el.tag_name) ?? '';
      for (const cls of classesOf(el).sort()) out += `.${cls.replace(/"/g, '')}`;
      const attributes: Record<string, string> = {};
      const text = str(el.$el_text ?? el.text);
      if (text) attributes.text = text.slice(0, 400);
      attributes['nth-child'] = str(el.nth_child) ?? '0';
      attributes['nth-of-type'] = str(el.nth_of_type) ?? '0';
      const href = str(el.attr__href ?? el.href);
      if (href) attributes.href = href.slice(0, 2048);
      const id = str(el.attr__id ?? el.attr_id);
      if (id) attributes.attr_id = id;
      for (const [k, v] of Object.entries(el)) {
        if (k.startsWith('attr__') && v !== null && v !== undefined)
          attributes[k] = typeof v === 'string' ? v : JSON.stringify(v);
      }
      const pairs = Object.entries(attributes)
        .map(([k, v]) => [escapeQuotes(k), escapeQuotes(v)] as const)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return `${out}:${pairs.map(([k, v]) => `${k}="${v}"`).join('')}`;
    })
    .join(';');
}

function intOrNull(value: string): number | null {
  const n = Number.parseInt(value, 10);
  return Number.isNaN(n) ? null : n;
}

const SPLIT_CHAIN = /(?:[^\s;"]|"(?:\\.|[^"])*")+/g;
const SPLIT_CLASS_ATTRIBUTES = /^(.*?)($|:([a-zA-Z\-_0-9]*=.*))/;
const PARSE_ATTRIBUTES = /(.*?)="(.*?[^\\])"/g;

/** The listing's `elements`, parsed from the chain as PostHog's `chain_to_elements` does. */
export function chainToElements(chain: string): Element[] {
  if (!chain) return [];
  const elements: Element[] = [];
  for (const [order, elString] of (chain.match(SPLIT_CHAIN) ?? []).entries()) {
    const [, tagAndClass = '', , attributeText = ''] = SPLIT_CLASS_ATTRIBUTES.exec(elString) ?? [];
    const element: Element = {
      text: null,
      tag_name: null,
      attr_class: null,
      href: null,
      attr_id: null,
      nth_child: null,
      nth_of_type: null,
      attributes: {},
      order,
    };
    if (tagAndClass) {
      const [tag, ...classes] = tagAndClass.split('.');
      element.tag_name = tag ?? null;
      if (classes.length) element.attr_class = classes.filter(Boolean);
    }
    for (const m of attributeText.matchAll(PARSE_ATTRIBUTES)) {
      const key = m[1]!;
      const value = m[2]!.replace(/\\"/g, '"');
      if (key === 'href') element.href = value;
      else if (key === 'nth-child') element.nth_child = intOrNull(value);
      else if (key === 'nth-of-type') element.nth_of_type = intOrNull(value);
      else if (key === 'text') element.text = value;
      else if (key === 'attr_id') element.attr_id = value;
      else if (key) element.attributes[key] = value;
    }
    elements.push(element);
  }
  return elements;
}
