// What Amplify Gen 2's tooling makes of an app's data model, offline: the SDL that
// `a.schema(...).transform()` (@aws-amplify/data-schema) hands Amplify's transformer, and the model
// introspection `ampx generate outputs` writes into amplify_outputs.json's data.model_introspection
// (@aws-amplify/model-generator calls @aws-amplify/graphql-generator's generateModels with
// target 'introspection' on that SDL).
//
//   node codegen/gen2.mjs <dir> [--check]
//
// <dir>/resource.mjs default-exports `(a) => a.schema(...)`; writes <dir>/schema.graphql and
// <dir>/model-introspection.json, or with --check fails when the committed files differ.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const { a } = require('@aws-amplify/data-schema');
const { generateModels } = require('@aws-amplify/graphql-generator');

const [dir, flag] = process.argv.slice(2);
if (!dir || (flag && flag !== '--check')) {
  console.error('usage: node codegen/gen2.mjs <dir> [--check]');
  process.exit(2);
}
const resource = await import(pathToFileURL(resolve(dir, 'resource.mjs')).href);
const sdl = resource.default(a).transform().schema;
const models = await generateModels({ schema: sdl, target: 'introspection' });
const files = {
  'schema.graphql': `${sdl}\n`,
  'model-introspection.json': models['model-introspection.json'],
};
let status = 0;
for (const [name, text] of Object.entries(files)) {
  const path = join(dir, name);
  if (flag !== '--check') writeFileSync(path, text);
  else if (readFileSync(path, 'utf8') !== text) {
    console.error(`${path} is not what Gen 2's tooling makes of resource.mjs: node codegen/gen2.mjs ${dir}`);
    status = 1;
  }
}
process.exit(status);
