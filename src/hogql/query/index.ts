export { isSet, print, printQuery, printSelect, type Node, type Query, type Select } from './ast.js';
export { compileQuery, type CompiledQuery, type CompileOptions } from './compiler.js';
export { QueryError, position } from './errors.js';
export { MAX_QUERY_LENGTH, parseExpression, parseOrder, parseQuery, parsedCount } from './parser.js';
