// What `amplify codegen models` writes for a JavaScript DataStore app, offline: the models
// (schema.js, index.js and their .d.ts) that Amplify's generator (@aws-amplify/graphql-generator's
// generateModels, on @aws-amplify/appsync-modelgen-plugin) makes of an app's schema.graphql.
//
//   node codegen/datastore-models.mjs <dir> [--check]
//
// Reads <dir>/schema.graphql; writes <dir>/models/, or with --check fails when the committed
// files differ.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const { generateModels } = require('@aws-amplify/graphql-generator');

const [dir, flag] = process.argv.slice(2);
if (!dir || (flag && flag !== '--check')) {
  console.error('usage: node codegen/datastore-models.mjs <dir> [--check]');
  process.exit(2);
}
const schema = readFileSync(join(dir, 'schema.graphql'), 'utf8');
const files = await generateModels({ schema, target: 'javascript', isDataStoreEnabled: true });
const out = join(dir, 'models');
mkdirSync(out, { recursive: true });
let status = 0;
for (const [name, text] of Object.entries(files)) {
  const path = join(out, name);
  if (flag !== '--check') writeFileSync(path, text);
  else if (readFileSync(path, 'utf8') !== text) {
    console.error(`${path} is not what Amplify's generator makes: node codegen/datastore-models.mjs ${dir}`);
    status = 1;
  }
}
process.exit(status);
