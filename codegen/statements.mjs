// The GraphQL statements `amplify codegen` writes into src/graphql/{queries,mutations,subscriptions}.js,
// made offline by the same code: amplify-codegen 4.10.4's `generateStatements` command calls
// @aws-amplify/graphql-generator's generateStatements({ schema, target, maxDepth,
// typenameIntrospection }), which calls @aws-amplify/graphql-docs-generator's
// generateGraphQLDocuments(schema, { maxDepth, useExternalFragmentForS3Object: target === 'graphql',
// typenameIntrospection, includeMetaData: true }) and formats each statement with prettier 1.19.1.
//
//   node codegen/statements.mjs <schema.json | schema.graphql> [--max-depth N] [--no-typename]
//        [--target javascript|typescript|flow] [--types-path ../API] [--raw] [--files]
//
// Input: an introspection result ({"data":{"__schema":...}} or {"__schema":...}, as amplify codegen
// downloads into src/graphql/schema.json) or an SDL file (AppSync scalars and @aws_* directives need
// no declarations: the generator appends them, and declarations the file already has are dropped
// from the file first so that they are not declared twice).
//
// Prints {"queries": {name: text}, "mutations": {...}, "subscriptions": {...}} where text is the body
// of the `export const name = /* GraphQL */ `...`` template string in src/graphql/queries.js (etc.),
// byte for byte. In a JavaScript file prettier re-indents the embedded GraphQL, so each body starts
// with a newline and is indented by two spaces; in a TypeScript file (with `as GeneratedQuery<...>`
// tags) it does not, so each body starts with `query` and ends with a newline. Options:
//   --max-depth N   amplifyExtension.maxDepth (default 2: the prompt's default and the generator's).
//   --no-typename   amplifyExtension.typenameIntrospection: false (default true when unset).
//   --target T      amplifyExtension.codeGenTarget: javascript (default), typescript or flow.
//   --types-path P  with typescript: the types file relative to the statements folder, without
//                   extension (default ../API: src/graphql/ and src/API.ts, the CLI's defaults).
//   --raw           the generator's own strings before prettier (generateGraphQLDocuments output),
//                   plus "fragments" when it made any.
//   --files         {"queries.js": text, ...}: the whole files amplify codegen writes.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { parse } = require('graphql');
const { generateGraphQLDocuments } = require('@aws-amplify/graphql-docs-generator');
const { generateStatements } = require('@aws-amplify/graphql-generator/lib/statements');

const usage =
  'usage: node codegen/statements.mjs <schema.json | schema.graphql> [--max-depth N] [--no-typename] ' +
  '[--target javascript|typescript|flow] [--types-path ../API] [--raw] [--files]';
const args = process.argv.slice(2);
let file;
let maxDepth = 2;
let typenameIntrospection = true;
let raw = false;
let files = false;
let target = 'javascript';
let typesPath = '../API';
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--max-depth') {
    maxDepth = Number.parseInt(args[++i], 10);
    if (!Number.isInteger(maxDepth) || maxDepth < 1) fail(`--max-depth wants a positive integer\n${usage}`);
  } else if (a.startsWith('--max-depth=')) {
    maxDepth = Number.parseInt(a.slice('--max-depth='.length), 10);
    if (!Number.isInteger(maxDepth) || maxDepth < 1) fail(`--max-depth wants a positive integer\n${usage}`);
  } else if (a === '--no-typename') typenameIntrospection = false;
  else if (a === '--raw') raw = true;
  else if (a === '--files') files = true;
  else if (a === '--target') {
    target = args[++i];
    if (!['javascript', 'typescript', 'flow'].includes(target)) fail(`--target wants javascript, typescript or flow\n${usage}`);
  } else if (a === '--types-path') typesPath = args[++i];
  else if (a === '-h' || a === '--help') {
    console.log(usage);
    process.exit(0);
  } else if (a.startsWith('-') || file !== undefined) fail(`unknown argument ${a}\n${usage}`);
  else file = a;
}
if (file === undefined) fail(usage);

function fail(message) {
  console.error(message);
  process.exit(2);
}

// What @aws-amplify/graphql-docs-generator 4.2.2 appends to every SDL schema (lib/generator/utils/loading.js).
const APPENDED_TYPES = new Set([
  'AWSDate', 'AWSTime', 'AWSDateTime', 'AWSTimestamp', 'AWSEmail', 'AWSJSON', 'AWSURL', 'AWSPhone',
  'AWSIPAddress', 'BigInt', 'Double',
]);
const APPENDED_DIRECTIVES = new Set([
  'aws_subscribe', 'deprecated', 'aws_auth', 'aws_api_key', 'aws_iam', 'aws_lambda', 'aws_oidc',
  'aws_cognito_user_pools',
]);

// The generator's own test (getSchemaType): JSON with `data` or `__schema` is an introspection
// result, anything that does not parse as JSON is SDL.
function isIntrospection(text) {
  try {
    const json = JSON.parse(text);
    return Boolean(json && (json.data || json.__schema));
  } catch {
    return false;
  }
}

// Drops from an SDL text the definitions the generator appends itself, keeping every other byte.
function withoutAppendedDeclarations(sdl) {
  const doc = parse(sdl);
  const cuts = doc.definitions
    .filter((d) =>
      (d.kind === 'ScalarTypeDefinition' && APPENDED_TYPES.has(d.name.value)) ||
      (d.kind === 'DirectiveDefinition' && APPENDED_DIRECTIVES.has(d.name.value)))
    .map((d) => [d.loc.start, d.loc.end]);
  if (!cuts.length) return sdl;
  let out = '';
  let at = 0;
  for (const [start, end] of cuts) {
    out += sdl.slice(at, start);
    at = end;
  }
  return out + sdl.slice(at);
}

let schema = readFileSync(file, 'utf8');
if (!isIntrospection(schema)) {
  try {
    JSON.parse(schema);
    fail(`${file}: JSON without "data" or "__schema" is not an introspection result`);
  } catch (e) {
    if (!(e instanceof SyntaxError)) throw e;
  }
  schema = withoutAppendedDeclarations(schema);
}

const operations = ['queries', 'mutations', 'subscriptions'];
let result = {};
if (raw) {
  // amplify codegen's options for a JavaScript app (amplify-codegen src/commands/statements.js and
  // @aws-amplify/graphql-generator lib/statements.js).
  const docs = generateGraphQLDocuments(schema, {
    maxDepth,
    useExternalFragmentForS3Object: false,
    typenameIntrospection,
    includeMetaData: true,
  });
  for (const op of [...operations, 'fragments']) {
    const map = docs[op];
    if (!map || !map.size) continue;
    result[op] = Object.fromEntries([...map].map(([name, v]) => [name, typeof v === 'string' ? v : v.graphql]));
  }
} else {
  const generated =
    generateStatements({
      schema,
      target,
      maxDepth,
      typenameIntrospection,
      relativeTypesPath: target === 'typescript' ? typesPath : undefined,
    }) ?? {};
  if (files) {
    result = generated;
  } else {
    const ext = target === 'typescript' ? 'ts' : 'js';
    for (const op of operations) {
      const text = generated[`${op}.${ext}`];
      if (text === undefined) continue;
      // Each statement is `export const name = /* GraphQL */ `...``, in the generator's order: the
      // text between the backticks, byte for byte (a statement never holds a backtick, a backslash
      // or `${`; checked).
      result[op] = {};
      for (const m of text.matchAll(/^export const (\w+) = \/\* GraphQL \*\/ `([^`]*)`/gm)) {
        if (m[2].includes('\\') || m[2].includes('${')) throw new Error(`${op}.${ext}: ${m[1]} needs unescaping`);
        result[op][m[1]] = m[2];
      }
      const count = (text.match(/^export const /gm) ?? []).length;
      if (count !== Object.keys(result[op]).length) throw new Error(`${op}.${ext}: ${count} exports, ${Object.keys(result[op]).length} statements read`);
    }
  }
}
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
