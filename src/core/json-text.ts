declare const schema: unique symbol;

/** JSON text of the contract's schema `T`, written by PostgreSQL (src/db/queries/json.ts). */
export type JsonText<T> = string & { readonly [schema]?: T };

/**
 * Adds fields computed in Node (permissions, parsed chains) to an object PostgreSQL wrote, so that
 * such rules stay in one place, the code the single reads use too.
 */
export function withFields<T>(objectText: string, fields: Record<string, unknown>): JsonText<T> {
  return withConstantFields<T>(fields)(objectText);
}

/** `withFields` for fields that never change: their JSON is written once, not once per row. */
export function withConstantFields<T>(fields: Record<string, unknown>): (objectText: string) => JsonText<T> {
  const suffix = JSON.stringify(fields).slice(1);
  return (objectText) => `${objectText.slice(0, -1)},${suffix}`;
}
