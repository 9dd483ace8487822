/** PostHog's tagify applied to a list: trimmed, lower-cased, blanks dropped, de-duplicated and sorted. */
export function normalizeTags(tags: readonly string[] | undefined): string[] {
  if (!tags) return [];
  return [...new Set(tags.map((t) => t.trim().toLowerCase()).filter(Boolean))].sort();
}
