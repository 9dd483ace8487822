export { print, printSelect, type Node, type Select } from './ast.js';
export { compileQuery, type CompiledQuery, type CompileOptions } from './compiler.js';
export { QueryError, position } from './errors.js';
export { parseExpression, parseQuery } from './parser.js';
