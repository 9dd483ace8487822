import { init, parse } from 'es-module-lexer';
import { PluginPackageError } from './archive.js';

/** Plugin-server methods, in the order capabilities list them. */
const METHODS = [
  'setupPlugin',
  'teardownPlugin',
  'getSettings',
  'onEvent',
  'composeWebhook',
  'processEvent',
  'exportEvents',
];
const SCHEDULED_TASKS = ['runEveryMinute', 'runEveryHour', 'runEveryDay'];

export type Capabilities = { methods?: string[]; scheduled_tasks?: string[] };

/**
 * What a plugin's main file implements, from the names it exports (type-only exports aside). Lists
 * that would be empty are left out, so a file exporting none of these gives `{}`, a frontend app.
 * The plugin server upgrades `exportEvents` to `onEvent`, so an exporter counts as a destination.
 */
export async function capabilitiesOf(filename: string, source: string): Promise<Capabilities> {
  await init();
  let names: Set<string>;
  try {
    const [, exports] = parse(source, filename);
    names = new Set(exports.flatMap((e) => (e.type !== 'reexport-all' && !e.typeOnly ? [e.name] : [])));
  } catch (err) {
    throw new PluginPackageError(`Could not parse ${filename}: ${(err as Error).message}`);
  }
  if (names.has('exportEvents')) names.add('onEvent');
  const methods = METHODS.filter((m) => names.has(m));
  const scheduled = SCHEDULED_TASKS.filter((t) => names.has(t));
  return {
    ...(methods.length ? { methods } : {}),
    ...(scheduled.length ? { scheduled_tasks: scheduled } : {}),
  };
}
