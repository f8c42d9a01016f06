/**
 * Lets esbuild tree-shake the AWS SDK's generated schema modules
 * (`@aws-sdk/client-<service>/dist-es/schemas/schemas_<n>.js`).
 *
 * Those modules declare every shape of the service as a module-level literal such as
 * `export var PutObjectRequest$ = [3, n0, _POR, { [_hC]: "-" }, ...]`, with its keys written as
 * computed keys over module-level string constants (`const _hC = "httpChecksum";`). esbuild cannot
 * prove that evaluating a computed key is free of side effects (the key could be an object with a
 * `toString`), so it keeps every schema of the service: all of S3's 66 KB for the two commands the
 * Lambda sends. Replacing `[_hC]:` by the constant's own literal (`"httpChecksum":`) builds the very
 * same objects and lets the unused ones go.
 *
 * The rewrite is deliberately narrow, and leaves a file untouched rather than guess:
 * - only the SDK's generated schema files (`isSdkSchemaFile`);
 * - only keys whose identifier is declared exactly once in the file, as `const _x = "<literal>";`
 *   at the top level (a string literal; never `__proto__`, which as a literal key would set the
 *   prototype instead of an own property);
 * - only in code, never inside a string: the file is split into string literals and code, and a
 *   file whose code holds a comment, a regular expression or a template literal with substitutions
 *   (anything this split cannot read for certain), or any inner scope that could shadow a constant
 *   (a function with parameters, a class, a catch clause), is returned unchanged.
 * test/unit/cdk/sdk-schema-keys.test.ts proves it on every installed SDK client: the rewritten
 * module exports structurally the same schemas as the original.
 *
 * Plain JavaScript: the child process that bundles (bundle-handler.mjs) runs it with no TypeScript
 * loader.
 */
import { readFile } from 'node:fs/promises';

/** The generated schema modules of the AWS SDK clients, by absolute path (either separator). */
export const SDK_SCHEMA_FILE = /[\\/]node_modules[\\/]@aws-sdk[\\/]client-[a-z0-9-]+[\\/]dist-es[\\/]schemas[\\/]schemas_\d+\.js$/;

/** @param {string} file */
export function isSdkSchemaFile(file) {
  return SDK_SCHEMA_FILE.test(file);
}

/** String literals: double, single, and template literals without substitutions. */
const STRING_LITERAL = /"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\$]|\\.|\$(?!\{))*`/g;

/** A top-level `const _x = "<literal>";` line. */
const STRING_CONST = /^const ([A-Za-z_$][\w$]*) = ("(?:[^"\\\n]|\\.)*");$/gm;

/** A computed key over an identifier, in a position where it can only be an object literal key. */
const COMPUTED_KEY = /([{,]\s*)\[([A-Za-z_$][\w$]*)\](\s*):/g;


/** What could bind a name in an inner scope (a parameter, a function, a class, a catch clause). */
const NESTED_BINDING = /\bfunction\b|\bclass\b|\bcatch\b|[\w$]\s*=>|\(\s*[^)\s][^)]*\)\s*=>/;

/**
 * Splits `source` into alternating code and string-literal segments (code first), or returns
 * `undefined` when the code holds what the split cannot read safely (`/` starts a comment, a
 * regular expression or a division; a backtick left over is a template with substitutions), or
 * anything that could shadow a module constant (the schema modules' only functions are `() => X$`).
 * @param {string} source
 * @returns {{ code: string[]; strings: string[] } | undefined}
 */
function splitStrings(source) {
  const code = [];
  const strings = [];
  let at = 0;
  for (const m of source.matchAll(STRING_LITERAL)) {
    code.push(source.slice(at, m.index));
    strings.push(m[0]);
    at = m.index + m[0].length;
  }
  code.push(source.slice(at));
  if (code.some((c) => /[/`'"]/.test(c) || NESTED_BINDING.test(c))) return undefined;
  return { code, strings };
}

/**
 * The identifiers declared once in `source` as a top-level string constant, with their value.
 * @param {string} source
 * @returns {Map<string, string>}
 */
export function stringConstants(source) {
  const found = new Map();
  for (const m of source.matchAll(STRING_CONST)) {
    const [, name = '', literal = ''] = m;
    let value;
    try {
      value = JSON.parse(literal);
    } catch {
      continue; // an escape JSON does not share with JavaScript: leave the key computed
    }
    if (typeof value !== 'string' || value === '__proto__') continue;
    const declarations = source.match(new RegExp(`\\b(?:const|let|var|function|class)\\s+${name.replace(/\$/g, '\\$')}(?![\\w$])`, 'g')) ?? [];
    if (declarations.length === 1) found.set(name, value);
  }
  return found;
}

/**
 * Rewrites the computed keys of a generated schema module over known string constants into
 * literal keys. Returns the new source and how many keys were rewritten (0 and the same source
 * when the file is not one this can read for certain).
 * @param {string} source
 * @returns {{ code: string; inlined: number }}
 */
export function inlineSchemaKeys(source) {
  const parts = splitStrings(source);
  if (parts === undefined) return { code: source, inlined: 0 };
  const constants = stringConstants(source);
  let inlined = 0;
  const code = parts.code.map((segment) =>
    segment.replace(COMPUTED_KEY, (whole, before, name, space) => {
      const value = constants.get(name);
      if (value === undefined) return whole;
      inlined++;
      return `${before}${JSON.stringify(value)}${space}:`;
    }),
  );
  let out = '';
  for (let i = 0; i < code.length; i++) out += code[i] + (parts.strings[i] ?? '');
  return { code: out, inlined };
}

/**
 * The esbuild plugin applying `inlineSchemaKeys` to the SDK's schema modules (esbuild runs
 * plugins only in its asynchronous `build`).
 * @returns {{ name: string; setup(build: { onLoad(options: { filter: RegExp }, callback: (args: { path: string }) => Promise<{ contents: string; loader: 'js' }>): void }): void }}
 */
export function sdkSchemaKeysPlugin() {
  return {
    name: 'tidemark-sdk-schema-keys',
    setup(build) {
      build.onLoad({ filter: SDK_SCHEMA_FILE }, async (args) => ({ contents: inlineSchemaKeys(await readFile(args.path, 'utf8')).code, loader: 'js' }));
    },
  };
}
