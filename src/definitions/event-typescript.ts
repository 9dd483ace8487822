import { createHash } from 'node:crypto';

/** Bumped whenever the module's shape changes, so clients know to regenerate. */
export const TYPESCRIPT_GENERATOR_VERSION = '1.0.0';

/**
 * A TypeScript module wrapping posthog-js whose `capture` knows the project's event names, as
 * PostHog's `event_definitions/typescript` generates it. Events have no declared property schemas
 * here, so each event's properties are `Record<string, any>` (PostHog's choice for an event without
 * a schema); unknown event names still capture, and `captureRaw` skips typing altogether.
 */
export function typescriptModule(names: string[], generatedAt: Date): string {
  const events = names.map((n) => `  ${JSON.stringify(n)}: Record<string, any>`).join('\n');
  return `/**
 * Generated from this project's event definitions; regenerate instead of editing.
 * Generated at: ${generatedAt.toISOString()}
 * Generator version: ${TYPESCRIPT_GENERATOR_VERSION}
 */
import originalPostHog from 'posthog-js'
import type { CaptureOptions, CaptureResult, PostHog as OriginalPostHog, Properties } from 'posthog-js'

interface EventSchemas {
${events}
}

export type EventName = keyof EventSchemas
export type EventProperties<K extends EventName> = EventSchemas[K] & Record<string, any>
type NeedsProperties<K extends EventName> = {} extends EventSchemas[K] ? false : true
type IsPlainString<T> = string extends T ? true : false

interface TypedPostHog extends Omit<OriginalPostHog, 'capture'> {
  /** A known event with its properties, or any other literal event name with free properties. */
  capture<K extends EventName>(
    event_name: K,
    ...args: NeedsProperties<K> extends true
      ? [properties: EventProperties<K>, options?: CaptureOptions]
      : [properties?: EventProperties<K>, options?: CaptureOptions]
  ): CaptureResult | undefined
  capture<T extends string>(
    event_name: IsPlainString<T> extends true ? never : T extends EventName ? never : T,
    properties?: Properties | null,
    options?: CaptureOptions
  ): CaptureResult | undefined
  /** posthog-js's own capture, without any typing. */
  captureRaw(event_name: string, properties?: Properties | null, options?: CaptureOptions): CaptureResult | undefined
}

function typed(original: OriginalPostHog): TypedPostHog {
  const capture = (event_name: string, properties?: Properties | null, options?: CaptureOptions) =>
    original.capture(event_name, properties, options)
  return new Proxy(original as unknown as TypedPostHog, {
    get(target, prop, receiver) {
      if (prop === 'capture' || prop === 'captureRaw') return capture
      return Reflect.get(target, prop, receiver)
    },
  })
}

const posthog = typed(originalPostHog as OriginalPostHog)

export default posthog
export type { EventSchemas, TypedPostHog }
export * from 'posthog-js'
`;
}

/** Changes exactly when the generated types would (not with the timestamp), for clients deciding to regenerate. */
export function typescriptSchemaHash(names: string[]): string {
  const input = JSON.stringify({
    language: 'TypeScript',
    version: TYPESCRIPT_GENERATOR_VERSION,
    events: [...names].sort(),
  });
  return createHash('sha256').update(input).digest('hex').slice(0, 32);
}
