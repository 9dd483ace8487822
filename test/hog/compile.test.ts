// Our own Hog programs, one or more per statement and expression kind of the grammar, compiled by us and run on
// PostHog's VM (@posthog/hogvm); each expected result is worked out by hand.
import t from 'tap';
import { compileExpr, compileHog, compileTemplate, HogCompileError, runHog } from '../../src/hog/index.js';

async function run(source: string, globals: Record<string, unknown> = {}) {
  const { bytecode } = await compileHog(source);
  const res = await runHog(bytecode, { globals, timeoutMs: 2_000 });
  if (!res.ok) throw new Error(`${source}: ${res.error}`);
  return { result: res.result, logs: res.logs.map((l) => l.message) };
}

const programs: [string, string, unknown][] = [
  // literals and arithmetic
  ['integer arithmetic, precedence', 'return 1 + 2 * 3 - 8 / 4', 5],
  ['modulo and unary minus', 'return -(17 % 5)', -2],
  ['float constant', 'return 1.5 * 2', 3],
  ['string escapes', "return 'a\\'b\\nc'", "a'b\nc"],
  ['booleans and null', 'return [true, false, null]', [true, false, null]],
  // variables and scopes
  ['declaration without value is null', 'let a; return a', null],
  ['assignment', 'let a := 1; a := a + 41; return a', 42],
  ['block scope shadows and ends', 'let a := 1; { let a := 2; a := 3 } return a', 1],
  // comparisons
  [
    'equality and order',
    'return [1 = 1, 1 == 2, 1 != 2, 2 > 1, 2 >= 2, 1 < 0, 1 <= 1]',
    [true, false, true, true, true, false, true],
  ],
  [
    'like / ilike / not like',
    "return ['abc' like 'a%', 'ABC' ilike 'a_c', 'abc' not like '%z%', 'abc' not ilike 'A%']",
    [true, true, true, false],
  ],
  ['in / not in', 'return [2 in [1, 2], 3 not in (1, 2)]', [true, true]],
  ['regex operators', "return ['abc' =~ 'b+', 'ABC' =~* '^a', 'abc' !~ 'z', 'abc' !~* 'B']", [true, true, true, false]],
  ['between', 'return [5 between 1 and 10, 5 not between 1 and 4]', [true, true]],
  // boolean logic
  [
    'and / or / not',
    'return [true and false, false or true, not false, true and (false or true)]',
    [false, true, true, true],
  ],
  ['ternary', "let x := 3; return x > 2 ? 'big' : 'small'", 'big'],
  ['multiIf', "let x := 2; return multiIf(x = 1, 'one', x = 2, 'two', 'many')", 'two'],
  // null handling
  ['?? on null and non-null', "let a := null; return [a ?? 'd', 0 ?? 'd']", ['d', 0]],
  ['is null / is not null', 'let a := null; return [a is null, 1 is not null]', [true, true]],
  ['null-safe access', "let d := {'a': null}; return [d?.a?.b, d.x?.y, d?.['a']]", [null, null, null]],
  ['comparison with null', 'return [null = null, null != 1, 1 = null]', [true, true, false]],
  // collections
  ['dict literal and access', "let d := {'a': 1, 'b': {'c': [10, 20]}}; return d.b.c[2] + d['a']", 21],
  [
    'dict property assignment',
    "let d := {'a': {'b': 1}}; d.a.b := 5; d['z'] := 'new'; return d",
    { a: { b: 5 }, z: 'new' },
  ],
  [
    'array literal, index from 1, set',
    'let a := [1, 2, 3]; a[2] := 20; return [a[1], a[2], a[-1], length(a)]',
    [1, 20, 3, 3],
  ],
  ['tuple and tuple access', "let t := (1, 'two', 3.5); return [t.2, t.3]", ['two', 3.5]],
  ['nested arrays', 'return [[1, 2], [], [[3]]]', [[1, 2], [], [[3]]]],
  // string templates
  ['f-string with expressions', "let n := 'hog'; let c := 3; return f'{n} x{c + 1}!'", 'hog x4!'],
  ['f-string with a dict value', "return f'v={ {'a': 1} }'", "v={'a': 1}"],
  // control flow
  [
    'if / else if / else',
    "fn f(x) { if (x < 0) { return 'neg' } else if (x = 0) { return 'zero' } else { return 'pos' } } " +
      'return [f(-1), f(0), f(1)]',
    ['neg', 'zero', 'pos'],
  ],
  ['while loop', 'let i := 0; let s := 0; while (i < 5) { i := i + 1; s := s + i } return s', 15],
  ['for loop', "let s := ''; for (let i := 0; i < 3; i := i + 1) { s := s || toString(i) } return s", '012'],
  ['for-in over an array', 'let s := 0; for (let v in [1, 2, 3]) { s := s + v } return s', 6],
  [
    'for-in over a dict with keys',
    "let s := ''; for (let k, v in {'a': 1, 'b': 2}) { s := concat(s, k, toString(v)) } return s",
    'a1b2',
  ],
  ['return from inside a loop', 'for (let i := 0; i < 10; i := i + 1) { if (i = 4) { return i * 10 } } return -1', 40],
  // functions
  ['function declaration and call', 'fn add(a, b) { return a + b } return add(2, 3)', 5],
  ['implicit null return', 'fn f() { let x := 1 } return f()', null],
  ['recursion', 'fn fact(n) { if (n <= 1) { return 1 } return n * fact(n - 1) } return fact(10)', 3628800],
  [
    'mutual recursion via a later binding',
    'fn even(n) { if (n = 0) { return true } return not even(n - 1) } return [even(4), even(7)]',
    [true, false],
  ],
  ['lambda', 'let dbl := x -> x * 2; return dbl(21)', 42],
  ['lambda with a block', 'let f := (a, b) -> { let s := a + b; return s * s }; return f(1, 2)', 9],
  [
    'lambdas passed to library functions',
    'return arrayMap(x -> x * x, arrayFilter(x -> x % 2 = 1, [1, 2, 3, 4, 5]))',
    [1, 9, 25],
  ],
  ['calling a returned function', 'fn mk() { return x -> x + 1 } return mk()(1)', 2],
  // closures
  [
    'closure counter keeps its state',
    'fn counter() { let c := 0; return () -> { c := c + 1; return c } } ' +
      'let a := counter(); let b := counter(); a(); a(); b(); return [a(), b()]',
    [3, 2],
  ],
  [
    'nested closures (upvalue of upvalue)',
    'fn outer() { let x := 1; fn mid() { fn inner() { x := x + 1; return x } return inner } return mid() } ' +
      'let f := outer(); f(); return f()',
    3,
  ],
  [
    'closure sets an object property',
    "fn mk() { let o := {'n': 0}; return () -> { o.n := o.n + 1; return o.n } } let f := mk(); f(); return f()",
    2,
  ],
  // exceptions
  [
    'try/catch a thrown Error',
    "try { throw Error('boom') } catch (e) { return [e.type, e.message] }",
    ['Error', 'boom'],
  ],
  [
    'typed catch chooses the matching block',
    "try { throw HogError('RetryError', 'again') } catch (e: ValueError) { return 'value' } " +
      'catch (e: RetryError) { return e.message }',
    'again',
  ],
  [
    'untyped catch after a typed one',
    "try { throw HogError('Other', 'x') } catch (e: RetryError) { return 'retry' } " +
      "catch (err) { return concat('any:', err.type) }",
    'any:Other',
  ],
  [
    'an uncaught type is rethrown to an outer try',
    "try { try { throw HogError('Deep', 'd') } catch (e: Shallow) { return 'no' } } catch (e) { return e.type }",
    'Deep',
  ],
  ['try without error continues', "let r := 'start'; try { r := 'ok' } catch (e) { r := 'bad' } return r", 'ok'],
  [
    'throw from a nested function unwinds',
    "fn f() { throw Error('inner') } try { f() } catch (e) { return e.message }",
    'inner',
  ],
];

t.test('each program returns its hand-computed result on PostHog VM', async (t) => {
  for (const [name, source, expected] of programs) {
    const { result } = await run(source);
    t.same(result, expected, name);
  }
});

t.test('globals, print and library calls', async (t) => {
  const event = { event: '$pageview', properties: { $browser: 'Firefox', n: 2 } };
  const { result, logs } = await run(
    "print('seen', event.event, {'n': event.properties.n}); return upper(event.properties.$browser)",
    { event },
  );
  t.equal(result, 'FIREFOX');
  t.same(logs, ['seen, $pageview, {"n":2}'], 'print logs its arguments joined, non-strings as JSON');
  t.equal((await run('return event.missing.deep', { event })).result, null, 'a missing global path is null');
});

t.test('exact bytecode, written by hand from the operation codes', async (t) => {
  // INTEGER=33 PLUS=6 STRING=32 GET_GLOBAL=1 EQ=11 AND=3 NOT=5 JUMP_IF_STACK_NOT_NULL=47 POP=35 FALSE=30
  t.same((await compileExpr('1 + 2')).bytecode, ['_H', 1, 33, 2, 33, 1, 6]);
  t.same((await compileExpr("event = 'a'")).bytecode, ['_H', 1, 32, 'a', 32, 'event', 1, 1, 11]);
  t.same((await compileExpr('properties.x')).bytecode, ['_H', 1, 32, 'x', 32, 'properties', 1, 2]);
  t.same((await compileExpr('not (1 and 2)')).bytecode, ['_H', 1, 33, 1, 33, 2, 3, 2, 5]);
  t.same((await compileExpr('ifNull(x, false)')).bytecode, ['_H', 1, 32, 'x', 1, 1, 47, 2, 35, 30]);
  // FLOAT=34: 2.0 stays a float although JSON would read it as an integer.
  t.same((await compileExpr('2.0')).bytecode, ['_H', 1, 34, 2]);
  // A program: local 0 = a; RETURN=38 GET_LOCAL=36; the block's end pops the local (never reached).
  t.same((await compileHog('let a := 1; return a')).bytecode, ['_H', 1, 33, 1, 36, 0, 38, 35]);
  // A closure: CALLABLE=52 name argc upvalues length body… CLOSURE=53 count (is_local, index)…; CLOSE_UPVALUE=57.
  t.same((await compileHog('let x := 1; let f := () -> x')).bytecode, [
    '_H',
    1,
    33,
    1,
    52,
    'lambda',
    0,
    1,
    3,
    55,
    0,
    38,
    53,
    1,
    true,
    0,
    35,
    57,
  ]);
});

t.test('compile errors carry a message and the position in the source', async (t) => {
  const cases: [string, RegExp][] = [
    ['let a := ;', /./],
    ['let a := 1; let a := 2;', /Variable `a` already declared in this scope/],
    ['undeclared := 1', /Variable "undeclared" not declared in this scope. Can not assign to globals./],
    ['return [1, 2][0]', /Array access starts from 1/],
    ['try { 1 } catch (e) { 2 } finally { 3 }', /finally blocks are not yet supported/],
    ['return person_id in cohort 5', /Can't use cohorts in real-time filters/],
  ];
  for (const [source, message] of cases) {
    const err = await compileHog(source).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof HogCompileError, `${source} is refused`);
    t.match((err as HogCompileError).message, message, source);
  }
  const syntax = (await compileHog('let a := (1 +;').catch((e: unknown) => e)) as HogCompileError;
  t.type(syntax.start, 'number', 'a syntax error has its start offset');
  t.ok((syntax.start ?? -1) >= 0 && (syntax.start ?? 99) <= 14);
  const declared = (await compileHog('let b := 1;\nlet b := 2;').catch((e: unknown) => e)) as HogCompileError;
  t.equal(declared.start, 12, 'a compile error points at its statement');
});

t.test('unknown functions compile with an error notice, as PostHog', async (t) => {
  const compiled = await compileHog('return notAFunction(1)');
  t.match(compiled.errors, [{ message: 'Hog function `notAFunction` is not implemented' }]);
  const allowed = await compileHog("fetch('https://x')", { supportedFunctions: ['fetch'] });
  t.same(allowed.errors, [], 'a function the caller supports is no error');
  t.match((await compileHog('return someGlobal')).warnings, [{ message: 'Unknown global variable: someGlobal' }]);
});

t.test('string inputs compile as templates, as PostHog compiles an input value', async (t) => {
  // concat of the text parts and the expressions: CALL_GLOBAL=2 'concat' with the part count.
  const { bytecode } = await compileTemplate('Hi {person.properties.name}, {event.event}!');
  t.same(bytecode, [
    '_H',
    1,
    32,
    'Hi ',
    32,
    'name',
    32,
    'properties',
    32,
    'person',
    1,
    3,
    32,
    ', ',
    32,
    'event',
    32,
    'event',
    1,
    2,
    32,
    '!',
    2,
    'concat',
    5,
  ]);
  const res = await runHog(bytecode, {
    globals: { person: { properties: { name: 'Ada' } }, event: { event: 'signup' } },
  });
  t.equal(res.result, 'Hi Ada, signup!');
  t.same((await compileTemplate('https://example.com/hook')).bytecode, ['_H', 1, 32, 'https://example.com/hook']);
  t.same((await compileTemplate('{inputs.n}')).bytecode, ['_H', 1, 32, 'n', 32, 'inputs', 1, 2], 'a lone expression');
});
