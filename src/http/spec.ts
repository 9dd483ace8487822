import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';

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

let yamlText: string | undefined;
export function specYaml(): string {
  yamlText ??= stringify(spec, { aliasDuplicateObjects: false });
  return yamlText;
}
