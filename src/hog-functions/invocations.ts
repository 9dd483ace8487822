import type { components } from '../../generated/api.js';
import { ApiError } from '../core/errors.js';
import type { NetworkPolicy } from '../net/index.js';
import type { SecretBox } from '../secrets/index.js';
import { compileFilters, compileProgram } from './compile.js';
import { matchesFilters, resolveInputs, runHog, type LogLine } from './execute.js';
import { deliveryFetch, mockFetch } from './fetch.js';
import { filterGlobals, type EventInput } from './globals.js';
import { openInputs, secretValues, storeInputs, type StoredInputs } from './inputs.js';
import type { HogFunctionRow } from './queries.js';

type Json = Record<string, unknown>;
type Invocation = components['schemas']['HogFunctionInvocation'];
type Body = {
  configuration?: components['schemas']['HogFunctionRequest'];
  globals: Json;
  mock_async_functions?: boolean;
};

/**
 * PostHog's test invocation: the stored function (or, for id `new`, nothing) with `configuration` on
 * top, run once on the given globals. Secret inputs left as `{"secret": true}` use the stored values.
 */
export async function invoke(
  box: SecretBox,
  policy: NetworkPolicy,
  stored: HogFunctionRow | undefined,
  body: Body,
  testAccounts: (filters: Json) => Promise<Json[]> = async () => [],
): Promise<Invocation> {
  const config = body.configuration ?? {};
  const type = stored?.type ?? config.type ?? 'destination';
  const hog = config.hog ?? stored?.hog;
  if (!hog) throw ApiError.validation('configuration__hog', 'Required.');
  const bytecode = await compileProgram(hog, type);
  const schema = (config.inputs_schema ?? stored?.inputs_schema ?? []) as Json[];
  const current: StoredInputs = { inputs: stored?.inputs ?? {}, encrypted_inputs: stored?.encrypted_inputs ?? {} };
  const inputs = config.inputs ? await storeInputs(box, schema, config.inputs, current) : current;
  const filters = config.filters
    ? await compileFilters(config.filters as Json, await testAccounts(config.filters as Json))
    : (stored?.filters ?? {});
  const globals = { ...body.globals };
  const logs: LogLine[] = [];
  const event = globals.event as EventInput | undefined;
  if (event && !matchesFilters(filters, filterGlobals(event, (globals.person as never) ?? null))) {
    logs.push({
      level: 'INFO',
      message: 'Mapping filtered out (the event does not match the filters).',
      timestamp: new Date(),
    });
  }
  const secrets = secretValues(box, inputs);
  globals.inputs = resolveInputs(openInputs(box, inputs), globals);
  const mocked = body.mock_async_functions ?? true;
  const fetch =
    type === 'destination'
      ? mocked
        ? mockFetch((message) => logs.push({ level: 'INFO', message, timestamp: new Date() }))
        : deliveryFetch(policy)
      : undefined;
  const run = await runHog(bytecode, globals, { ...(fetch ? { fetch } : {}), secrets });
  const all = [...logs, ...run.logs].sort((a, b) => a.timestamp.getTime() - b.timestamp.getTime());
  const mask = (s: string) => secrets.reduce((acc, secret) => acc.split(secret).join('***REDACTED***'), s);
  return {
    result: run.result ?? null,
    status: run.error ? 'error' : 'success',
    errors: run.error ? [run.error] : [],
    logs: all.map((l) => ({ level: l.level, message: mask(l.message), timestamp: l.timestamp.toISOString() })),
  };
}
