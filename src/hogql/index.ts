export { isSet, print, printQuery, printSelect, type Node, type Query, type Select } from './ast.js';
export { compileExpression, compileQuery, type CompiledQuery, type CompileOptions } from './compiler.js';
export { QueryError, position } from './errors.js';
export {
  CACHE_ENTRIES,
  MAX_QUERY_LENGTH,
  parseExpression,
  parseOrder,
  parseOwnQuery,
  parseQuery,
  parsedCount,
} from './parser.js';
