import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** The bundled contract (`make generate` writes it); the server, the docs and the tests all read this one file. */
export const specPath = fileURLToPath(new URL('../../generated/openapi.json', import.meta.url));

export interface SpecOperation {
  operationId?: string;
  security?: Record<string, string[]>[];
  [key: string]: unknown;
}
export interface Spec {
  paths: Record<string, Record<string, SpecOperation>>;
  security?: Record<string, string[]>[];
  components: Record<string, Record<string, unknown>>;
  [key: string]: unknown;
}

export const spec: Spec = JSON.parse(readFileSync(specPath, 'utf8'));

// The YAML library is needed only by the first request for the YAML contract: loaded then, not at boot.
const load = createRequire(import.meta.url);
export function specYaml(document: object = spec): string {
  const { stringify } = load('yaml') as typeof import('yaml');
  return stringify(document, { aliasDuplicateObjects: false });
}
