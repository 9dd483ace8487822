// What PostHog's plugin server gives its VM from outside: RE2 regexes (linear time, so a hostile pattern cannot
// stall the event loop past the VM's time limit) and Node's crypto (md5Hex, sha256Hex, HMACs).
import crypto from 'node:crypto';
import { RE2JS } from 're2js';

const MAX_CACHED_PATTERNS = 500;
const patterns = new Map<string, RE2JS>();

function compiled(regex: string): RE2JS {
  let p = patterns.get(regex);
  if (!p) {
    p = RE2JS.compile(regex);
    if (patterns.size >= MAX_CACHED_PATTERNS) patterns.delete(patterns.keys().next().value as string);
    patterns.set(regex, p);
  }
  return p;
}

export const HOG_EXTERNAL = {
  regex: {
    match: (regex: string, value: string): boolean => compiled(regex).matcher(value).find(),
    /** The first capture group, or the whole match without groups; '' without a match (PostHog's extract). */
    extract: (regex: string, value: string): string => {
      const m = compiled(regex).matcher(value);
      if (!m.find()) return '';
      return (m.groupCount() > 0 ? m.group(1) : m.group(0)) ?? '';
    },
  },
  crypto,
};
