// Hog: PostHog's language for functions run on events. Compiling (parser + PostHog's bytecode compiler), event
// filters compiled as PostHog does, and running bytecode on PostHog's VM within its limits.
export {
  type Bytecode,
  type CompiledHog,
  type CompileNotice,
  type CompileOptions,
  compileAst,
  compileExpr,
  compileHog,
  compileTemplate,
} from './compile.js';
export { HogCompileError } from './errors.js';
export { type AstNode, parseHog } from './parse.js';
export {
  formatLogMessage,
  HOG_LIMITS,
  type HogAsyncFunction,
  type HogLog,
  type HogLogLevel,
  type RunOptions,
  type RunResult,
  runHog,
} from './run.js';
export {
  type CompiledFilters,
  compileFilters,
  type EventFilter,
  type FilterContext,
  type FilterEvent,
  type FilterGroup,
  type FilterPerson,
  filterGlobals,
  filtersToAst,
  type HogFunctionFilters,
  matchesFilters,
} from './filters.js';
export { type PropertyContext, type PropertyFilter, propertyToAst } from './properties.js';
