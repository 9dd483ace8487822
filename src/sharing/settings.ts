/**
 * PostHog's SharingConfigurationSettings (display options of the shared page), each a boolean, and ours:
 * `allowDateRangeChange` lets the viewer pick another date range (PostHog's issue 12051).
 */
const SETTINGS_KEYS = [
  'detailed',
  'hideExtraDetails',
  'legend',
  'noHeader',
  'showInspector',
  'whitelabel',
  'allowDateRangeChange',
] as const;

export type SharingSettings = Partial<Record<(typeof SETTINGS_KEYS)[number], boolean>>;

/** Known keys only, each a boolean; nulls are dropped, as PostHog does. */
export function cleanSharingSettings(value: Record<string, unknown> | null): SharingSettings | null | 'invalid' {
  if (value === null) return null;
  const out: SharingSettings = {};
  for (const key of SETTINGS_KEYS) {
    const v = value[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'boolean') return 'invalid';
    out[key] = v;
  }
  return out;
}

/** The stored settings as the page reads them (a row written before a key existed simply lacks it). */
export function settingsOf(stored: Record<string, unknown> | null): SharingSettings {
  const cleaned = cleanSharingSettings(stored ?? {});
  return cleaned === 'invalid' || cleaned === null ? {} : cleaned;
}
