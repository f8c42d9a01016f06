/**
 * The schema-key rewrite of Lambda bundles (lib/bundler/sdk-schema-keys.mjs): on every installed
 * AWS SDK client's generated schema module it builds exactly the same schemas as the original, and
 * it leaves alone whatever it cannot read for certain.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { inlineSchemaKeys, isSdkSchemaFile, stringConstants } from '../../../lib/bundler/sdk-schema-keys.mjs';
import { PACKAGE_ROOT } from '../../../lib/defaults.js';

const require = createRequire(path.join(PACKAGE_ROOT, 'package.json'));
const esbuild = require('esbuild') as { build(o: Record<string, unknown>): Promise<unknown> };
const work = mkdtempSync(path.join(tmpdir(), 'tidemark-schema-keys-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** Every generated schema module of the installed `@aws-sdk/client-*` packages. */
function sdkSchemaFiles(): string[] {
  const scope = path.join(PACKAGE_ROOT, 'node_modules', '@aws-sdk');
  return readdirSync(scope)
    .filter((d) => d.startsWith('client-'))
    .flatMap((d) => {
      const dir = path.join(scope, d, 'dist-es', 'schemas');
      try {
        return readdirSync(dir)
          .filter((f) => /^schemas_\d+\.js$/.test(f))
          .map((f) => path.join(dir, f));
      } catch {
        return [];
      }
    });
}

/** Bundles `source` as if it were `file` (same folder for its imports) and imports the result. */
async function load(file: string, source: string, label: string): Promise<Record<string, unknown>> {
  const outfile = path.join(work, `${path.basename(path.dirname(path.dirname(path.dirname(file))))}-${label}.mjs`);
  await esbuild.build({
    stdin: { contents: source, resolveDir: path.dirname(file), sourcefile: file, loader: 'js' },
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    mainFields: ['module', 'main'],
    logLevel: 'error',
  });
  return (await import(pathToFileURL(outfile).href)) as Record<string, unknown>;
}

/**
 * A JSON image of a module's exports that keeps key order: schema thunks (`() => X$`) are called,
 * classes are named, registries' maps listed, and an object met again is a `{ ref }` to its first
 * appearance (schemas are cyclic), so two loads compare by structure, not identity.
 */
function image(value: unknown, seen = new Map<object, number>()): unknown {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'function') {
      if (/^class\b/.test(Function.prototype.toString.call(value))) return { class: (value as { name: string }).name };
      if ((value as () => unknown).length === 0) return { thunk: image((value as () => unknown)(), seen) };
      return { function: (value as { name: string }).name };
    }
    return typeof value === 'bigint' ? { bigint: String(value) } : value;
  }
  const ref = seen.get(value);
  if (ref !== undefined) return { ref };
  seen.set(value, seen.size);
  if (Array.isArray(value)) return value.map((v) => image(v, seen));
  if (value instanceof Map) return { map: [...value].map(([k, v]) => [image(k, seen), image(v, seen)]) };
  const out: Record<string, unknown> = { constructor: (value as object).constructor?.name ?? null };
  for (const key of Object.keys(value)) out[key] = image((value as Record<string, unknown>)[key], seen);
  return out;
}

describe('inlineSchemaKeys on the installed SDK clients', () => {
  const files = sdkSchemaFiles();

  it('finds the schema modules of S3 and DynamoDB at least', () => {
    assert.ok(files.some((f) => f.includes('client-s3')) && files.some((f) => f.includes('client-dynamodb')), files.join(', '));
    for (const f of files) assert.ok(isSdkSchemaFile(f), f);
  });

  for (const file of files) {
    const client = path.basename(path.dirname(path.dirname(path.dirname(file))));
    it(`${client}: every computed key becomes a literal and the module exports the same schemas`, async () => {
      const source = readFileSync(file, 'utf8');
      const { code, inlined } = inlineSchemaKeys(source);
      assert.ok(inlined > 0, 'no key rewritten: has the generated format changed?');
      assert.doesNotMatch(code, /\[_\w+\]\s*:/, 'a computed key is left');
      const [original, rewritten] = await Promise.all([load(file, source, 'original'), load(file, code, 'inlined')]);
      assert.deepEqual(Object.keys(rewritten), Object.keys(original));
      const a = image(original);
      const b = image(rewritten);
      assert.equal(JSON.stringify(b), JSON.stringify(a));
      assert.ok(JSON.stringify(a).length > 1000, 'the image holds the schemas');
    });
  }
});

describe('inlineSchemaKeys leaves alone what it cannot read for certain', () => {
  it('rewrites a key over a known string constant, in order, with its spacing', () => {
    const src = 'const _a = "alpha";\nconst _b = "beta";\nexport var X$ = [3, { [_a]: 1, [_b] : _a }];\n';
    assert.deepEqual(inlineSchemaKeys(src), { code: 'const _a = "alpha";\nconst _b = "beta";\nexport var X$ = [3, { "alpha": 1, "beta" : _a }];\n', inlined: 2 });
  });

  it('keeps keys whose identifier is unknown, not a string, declared twice or __proto__', () => {
    const src = [
      'const _n = 5;',
      'const _p = "__proto__";',
      'const _d = "one";',
      'let _d2 = "x";',
      'const _t = "two";',
      'var _t = "again";',
      'export var X$ = { [_n]: 1, [_p]: 2, [_u]: 3, [_d2]: 4, [_t]: 5, [_d]: 6 };',
    ].join('\n');
    const { code, inlined } = inlineSchemaKeys(src);
    assert.equal(inlined, 1);
    assert.match(code, /\{ \[_n\]: 1, \[_p\]: 2, \[_u\]: 3, \[_d2\]: 4, \[_t\]: 5, "one": 6 \}/);
    assert.deepEqual([...stringConstants(src)], [['_d', 'one']]);
  });

  it('never touches string contents, and only rewrites object keys', () => {
    const src = 'const _a = "alpha";\nexport var X$ = ["{ [_a]: 1 }", `, [_a]: 2`, [_a], { k: [_a] }, { [_a]: 3 }];\n';
    const { code, inlined } = inlineSchemaKeys(src);
    assert.equal(inlined, 1);
    assert.equal(code, 'const _a = "alpha";\nexport var X$ = ["{ [_a]: 1 }", `, [_a]: 2`, [_a], { k: [_a] }, { "alpha": 3 }];\n');
  });

  for (const [what, src] of [
    ['a comment', 'const _a = "alpha";\n// note\nexport var X$ = { [_a]: 1 };\n'],
    ['a regular expression', 'const _a = "alpha";\nexport var X$ = { [_a]: /x/ };\n'],
    ['a template literal with a substitution', 'const _a = "alpha";\nexport var X$ = { [_a]: `$' + '{_a}` };\n'],
    ['an unterminated string', 'const _a = "alpha";\nexport var X$ = { [_a]: "x\n" };\n'],
    ['a parameter that could shadow a constant', 'const _a = "alpha";\nexport var f = (_a) => ({ [_a]: 1 });\n'],
    ['a function', 'const _a = "alpha";\nexport function f() { return { [_a]: 1 }; }\n'],
  ] as const) {
    it(`returns a file holding ${what} unchanged`, () => {
      assert.deepEqual(inlineSchemaKeys(src), { code: src, inlined: 0 });
    });
  }

  it('applies to the SDK clients\' generated schema modules only', () => {
    assert.ok(isSdkSchemaFile('/x/node_modules/@aws-sdk/client-s3/dist-es/schemas/schemas_0.js'));
    assert.ok(isSdkSchemaFile('C:\\x\\node_modules\\@aws-sdk\\client-dynamodb\\dist-es\\schemas\\schemas_12.js'));
    for (const other of [
      '/x/node_modules/@aws-sdk/client-s3/dist-cjs/schemas/schemas_0.js',
      '/x/node_modules/@aws-sdk/core/dist-es/schemas/schemas_0.js',
      '/x/node_modules/@aws-sdk/client-s3/dist-es/schemas/other.js',
      '/x/functions/schemas/schemas_0.js',
    ]) {
      assert.ok(!isSdkSchemaFile(other), other);
    }
  });
});
