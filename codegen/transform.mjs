// Amplify Gen 1's GraphQL transformer, offline: prints the SDL that `amplify api gql-compile` /
// `amplify push` writes to amplify/backend/api/<name>/build/schema.graphql, made by the same
// packages the CLI runs (@aws-amplify/amplify-category-api 5.15.3's pins: the v2 transformer
// @aws-amplify/graphql-transformer 1.8.4 on aws-cdk-lib 2.189.1, the v1 graphql-transformer-core
// 8.2.18 with its transformers). No AWS account, credentials or network.
//
//   node codegen/transform.mjs <schema.graphql | dir> [--cli-json path] [--transform-conf path]
//        [--v1 | --v2] [--auth apiKey,userPools,iam,oidc,lambda] [--cli-inputs path] [--flag name=value ...]
//
// <dir> is either an API resource folder (amplify/backend/api/<name>: schema.graphql or schema/;
// its transform.conf.json, parameters.json and cli-inputs.json are read too) or a folder of
// .graphql files (the `schema/` folder form). The schema is read as the CLI reads it (graphql-transformer-core's
// loadProject), so a single file is re-printed and loses its comments, as it does in the CLI.
//
// Feature flags: the `features.graphqltransformer` section of --cli-json (amplify/cli.json); a flag
// the file lacks takes the CLI's default for an existing project. Without --cli-json every flag takes
// the CLI's default for a new project (what `amplify init` writes today: transformerVersion 2), or
// with --v1 the existing-project defaults (what the CLI gives an old project without cli.json).
// --flag name=value (case-insensitive names) overrides either.
// Transformer version: --v1 / --v2, else from the flags as the CLI picks it
// (useExperimentalPipelinedTransformer false -> 1, else transformerVersion, with 1 read as 2 when
// useExperimentalPipelinedTransformer is true, as the CLI migrates it).
//
// Auth modes (--auth): a comma list, the first the default mode, the rest additional. Without it,
// the modes of --cli-inputs (amplify/backend/api/<name>/cli-inputs.json, found in a resource folder),
// else apiKey (the default mode of an `amplify add api` app), then the modes the schema's rules
// need, in the order userPools, iam, oidc, lambda: owner/groups/private rules without a provider and
// provider: userPools -> userPools; provider: iam -> iam; provider: oidc -> oidc; allow: custom or
// provider: function -> lambda; @aws_cognito_user_pools/@aws_iam/@aws_oidc/@aws_lambda likewise.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

const require = createRequire(import.meta.url);

const usage =
  'usage: node codegen/transform.mjs <schema.graphql | dir> [--cli-json path] [--transform-conf path] ' +
  '[--v1 | --v2] [--auth apiKey,userPools,iam,oidc,lambda] [--cli-inputs path] [--flag name=value ...]';

function fail(message) {
  console.error(message);
  process.exit(2);
}

const args = process.argv.slice(2);
let input;
let cliJsonPath;
let transformConfPath;
let forcedVersion;
let authList;
let cliInputsPath;
const flagOverrides = {};
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const value = () => {
    if (i + 1 >= args.length) fail(`${a} wants a value\n${usage}`);
    return args[++i];
  };
  if (a === '--cli-json') cliJsonPath = value();
  else if (a === '--transform-conf') transformConfPath = value();
  else if (a === '--v1') forcedVersion = 1;
  else if (a === '--v2') forcedVersion = 2;
  else if (a === '--auth') authList = value();
  else if (a === '--cli-inputs') cliInputsPath = value();
  else if (a === '--flag') {
    const [name, v] = value().split('=');
    if (v === undefined) fail(`--flag wants name=value\n${usage}`);
    flagOverrides[name.toLowerCase()] = v === 'true' ? true : v === 'false' ? false : Number.isNaN(Number(v)) ? v : Number(v);
  } else if (a === '-h' || a === '--help') {
    console.log(usage);
    process.exit(0);
  } else if (a.startsWith('-') || input !== undefined) fail(`unknown argument ${a}\n${usage}`);
  else input = a;
}
if (input === undefined) fail(usage);

// ---- Feature flags: the CLI's own FeatureFlags (@aws-amplify/amplify-cli-core 4.6.0), read from a
// throwaway project folder holding the given cli.json, as AmplifyCLIFeatureFlagAdapter reads them.
const { FeatureFlags } = require('@aws-amplify/amplify-cli-core');
const flagRoot = mkdtempSync(path.join(tmpdir(), 'tablegraph-flags-'));
process.on('exit', () => rmSync(flagRoot, { recursive: true, force: true }));
mkdirSync(path.join(flagRoot, 'amplify', '.config'), { recursive: true });
writeFileSync(path.join(flagRoot, 'amplify', '.config', 'project-config.json'), '{}\n');
if (cliJsonPath) writeFileSync(path.join(flagRoot, 'amplify', 'cli.json'), readFileSync(cliJsonPath));
{
  const cwd = process.cwd();
  process.chdir(flagRoot);
  try {
    // useNewDefaults: without a cli.json, the defaults `amplify init` writes for a new project,
    // unless --v1 says it is an old project (the CLI gives a project without cli.json the
    // existing-project defaults, which are also the ones that select v1).
    await FeatureFlags.initialize({ getCurrentEnvName: () => '' }, !cliJsonPath && forcedVersion !== 1);
  } finally {
    process.chdir(cwd);
  }
}
function flag(name, type, fallback) {
  const key = name.toLowerCase();
  if (key in flagOverrides) return flagOverrides[key];
  try {
    return type === 'number' ? FeatureFlags.getNumber(`graphQLTransformer.${name}`) : FeatureFlags.getBoolean(`graphQLTransformer.${name}`);
  } catch (e) {
    if (fallback) return fallback; // as AmplifyCLIFeatureFlagAdapterBase.getValue
    throw e;
  }
}
const featureFlags = {
  getBoolean: (name, fallback) => Boolean(flag(name, 'boolean', fallback)),
  getNumber: (name, fallback) => Number(flag(name, 'number', fallback)),
  getObject: () => {
    throw new Error('Not implemented');
  },
};

function transformerVersion() {
  if (forcedVersion) return forcedVersion;
  if (featureFlags.getBoolean('useExperimentalPipelinedTransformer') === false) return 1;
  const v = featureFlags.getNumber('transformerVersion');
  if (v === 1) return 2; // the CLI rewrites this legacy pair to transformerversion 2 and carries on
  if (v !== 2) fail(`Invalid value specified for transformerVersion: '${v}'`);
  return v;
}

// ---- The project folder the CLI would read: schema.graphql or schema/, transform.conf.json,
// parameters.json, in a temporary folder.
const work = mkdtempSync(path.join(tmpdir(), 'tablegraph-transform-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
const inputStat = statSync(input);
if (inputStat.isDirectory()) {
  const isResourceDir = ['schema.graphql', 'schema.sql.graphql', 'schema'].some((f) => existsSync(path.join(input, f)));
  if (isResourceDir) {
    if (!cliInputsPath && existsSync(path.join(input, 'cli-inputs.json'))) cliInputsPath = path.join(input, 'cli-inputs.json');
    for (const f of ['schema.graphql', 'schema.sql.graphql', 'schema', 'transform.conf.json', 'parameters.json']) {
      if (existsSync(path.join(input, f))) cpSync(path.join(input, f), path.join(work, f), { recursive: true });
    }
  } else {
    cpSync(input, path.join(work, 'schema'), { recursive: true });
  }
} else {
  writeFileSync(path.join(work, 'schema.graphql'), readFileSync(input));
}
if (existsSync(path.join(work, 'schema.sql.graphql'))) fail('schema.sql.graphql (SQL data sources) is not supported offline');
if (transformConfPath) writeFileSync(path.join(work, 'transform.conf.json'), readFileSync(transformConfPath));

const { parse, visit } = require('graphql');
const core1 = require('graphql-transformer-core');
const project = await core1.readProjectConfiguration(work);
const schemaText = project.schema.toString();

// ---- Auth modes.
const MODES = {
  apiKey: { authenticationType: 'API_KEY', apiKeyConfig: { apiKeyExpirationDays: 7, description: '' } },
  userPools: { authenticationType: 'AMAZON_COGNITO_USER_POOLS', userPoolConfig: { userPoolId: 'offline-user-pool' } },
  iam: { authenticationType: 'AWS_IAM' },
  oidc: { authenticationType: 'OPENID_CONNECT', openIDConnectConfig: { name: 'offline-oidc', issuerUrl: 'https://issuer.invalid' } },
  lambda: { authenticationType: 'AWS_LAMBDA', lambdaAuthorizerConfig: { lambdaFunction: 'offline-authorizer', ttlSeconds: 300 } },
};
function modesFromSchema(sdl) {
  const used = new Set();
  const value = (node) => {
    switch (node.kind) {
      case 'ListValue':
        return node.values.map(value);
      case 'ObjectValue':
        return Object.fromEntries(node.fields.map((f) => [f.name.value, value(f.value)]));
      case 'StringValue':
      case 'EnumValue':
        return node.value;
      default:
        return undefined;
    }
  };
  visit(parse(sdl), {
    Directive(d) {
      const name = d.name.value;
      if (name === 'aws_cognito_user_pools' || name === 'aws_auth') used.add('userPools');
      else if (name === 'aws_iam') used.add('iam');
      else if (name === 'aws_oidc') used.add('oidc');
      else if (name === 'aws_lambda') used.add('lambda');
      else if (name === 'aws_api_key') used.add('apiKey');
      if (name !== 'auth') return;
      const rules = d.arguments.find((a) => a.name.value === 'rules');
      for (const rule of rules ? [value(rules.value)].flat() : []) {
        if (!rule || typeof rule !== 'object') continue;
        const provider = rule.provider;
        if (provider === 'iam') used.add('iam');
        else if (provider === 'oidc') used.add('oidc');
        else if (provider === 'function' || rule.allow === 'custom') used.add('lambda');
        else if (provider === 'userPools') used.add('userPools');
        else if (provider === 'apiKey') used.add('apiKey');
        else if (['owner', 'groups', 'private'].includes(rule.allow)) used.add('userPools');
      }
    },
  });
  return ['apiKey', ...['userPools', 'iam', 'oidc', 'lambda'].filter((m) => used.has(m))];
}
// amplify/backend/api/<name>/cli-inputs.json: serviceConfiguration.defaultAuthType and
// additionalAuthTypes, where `amplify add api` / `amplify update api` keep the API's auth modes.
function modesFromCliInputs(file) {
  const byType = { API_KEY: 'apiKey', AMAZON_COGNITO_USER_POOLS: 'userPools', AWS_IAM: 'iam', OPENID_CONNECT: 'oidc', AWS_LAMBDA: 'lambda' };
  const config = JSON.parse(readFileSync(file, 'utf8')).serviceConfiguration ?? {};
  return [config.defaultAuthType, ...(config.additionalAuthTypes ?? [])].filter(Boolean).map((t) => {
    if (!byType[t.mode]) fail(`${file}: unknown auth mode ${t.mode}; give --auth`);
    return byType[t.mode];
  });
}
const modeNames = authList
  ? authList.split(',').map((s) => s.trim()).filter(Boolean)
  : cliInputsPath
    ? modesFromCliInputs(cliInputsPath)
    : modesFromSchema(schemaText);
for (const m of modeNames) if (!MODES[m]) fail(`unknown auth mode ${m}: want apiKey, userPools, iam, oidc or lambda`);
if (new Set(modeNames).size !== modeNames.length || !modeNames.length) fail(`--auth wants distinct modes: ${authList}`);
const authConfig = {
  defaultAuthentication: MODES[modeNames[0]],
  additionalAuthenticationProviders: modeNames.slice(1).map((m) => MODES[m]),
};

const log = (l) => console.error(`${l.level ?? 'INFO'}: ${l.message}`);
const version = transformerVersion();
let out;
if (version === 2) out = transformV2();
else out = await transformV1();
process.stdout.write(out);

// ---- v2: what amplify-category-api 5.15.3 lib/graphql-transformer/transform-graphql-schema-v2.js
// and transformer-options-v2.js do, less the account look-ups (admin roles, identity pool, S3 bucket).
function transformV2() {
  const { executeTransform } = require('@aws-amplify/graphql-transformer');
  const core2 = require('@aws-amplify/graphql-transformer-core');
  const { TransformManager } = require('./node_modules/.amplify-category-api-cdk-compat/transform-manager.js');
  const dataSourceStrategies = {};
  for (const [typeName, ds] of project.modelToDatasourceMap ?? new Map()) {
    if (!core2.isDynamoDbType(ds.dbType)) fail(`${typeName}: SQL data sources are not supported offline`);
    dataSourceStrategies[typeName] =
      ds.provisionStrategy === 'AMPLIFY_TABLE' ? core2.DDB_AMPLIFY_MANAGED_DATASOURCE_STRATEGY : core2.DDB_DEFAULT_DATASOURCE_STRATEGY;
  }
  const parameters = existsSync(path.join(work, 'parameters.json'))
    ? JSON.parse(readFileSync(path.join(work, 'parameters.json'), 'utf8'))
    : {};
  const modes = [authConfig.defaultAuthentication, ...authConfig.additionalAuthenticationProviders].map((e) => e.authenticationType);
  const manager = new TransformManager({ overrideFlag: false }, modes.includes('AWS_IAM'), modes.includes('AMAZON_COGNITO_USER_POOLS'), [], undefined);
  const transformParameters = {
    shouldDeepMergeDirectiveConfigDefaults: featureFlags.getBoolean('shouldDeepMergeDirectiveConfigDefaults'),
    useSubUsernameForDefaultIdentityClaim: featureFlags.getBoolean('useSubUsernameForDefaultIdentityClaim'),
    populateOwnerFieldForStaticGroupAuth: featureFlags.getBoolean('populateOwnerFieldForStaticGroupAuth'),
    secondaryKeyAsGSI: featureFlags.getBoolean('secondaryKeyAsGSI'),
    enableAutoIndexQueryNames: featureFlags.getBoolean('enableAutoIndexQueryNames'),
    respectPrimaryKeyAttributesOnConnectionField: featureFlags.getBoolean('respectPrimaryKeyAttributesOnConnectionField'),
    subscriptionsInheritPrimaryAuth: featureFlags.getBoolean('subscriptionsInheritPrimaryAuth'),
    suppressApiKeyGeneration: 'CreateAPIKey' in parameters && parameters.CreateAPIKey !== 1 && parameters.CreateAPIKey !== '1',
    disableResolverDeduping: project.config.DisableResolverDeduping ?? false,
    enableSearchNodeToNodeEncryption: false,
    sandboxModeEnabled: sandboxModeEnabled(schemaText),
    enableTransformerCfnOutputs: true,
    allowDestructiveGraphqlSchemaUpdates: false,
    replaceTableUponGsiUpdate: false,
    allowGen1Patterns: true,
    enableGen2Migration: featureFlags.getBoolean('enableGen2Migration'),
  };
  executeTransform({
    transformersFactoryArgs: { storageConfig: undefined, customTransformers: [] },
    authConfig,
    resolverConfig: project.config.ResolverConfig,
    userDefinedSlots: {},
    stackMapping: project.config.StackMapping,
    transformParameters,
    scope: manager.rootStack,
    nestedStackProvider: manager.getNestedStackProvider(),
    assetProvider: manager.getAssetProvider(),
    parameterProvider: manager.getParameterProvider(),
    synthParameters: manager.getSynthParameters(),
    schema: schemaText,
    dataSourceStrategies,
    sqlDirectiveDataSourceStrategies: undefined,
    printTransformerLog: log,
    rdsLayerMapping: undefined,
    rdsSnsTopicMapping: undefined,
  });
  return manager.generateDeploymentResources().schema;
}

// amplify-category-api lib/graphql-transformer/sandbox-mode-helpers.js schemaHasSandboxModeEnabled.
function sandboxModeEnabled(sdl) {
  const amplify = parse(sdl).definitions.find((d) => d.kind === 'InputObjectTypeDefinition' && d.name.value === 'AMPLIFY');
  const field = amplify?.fields.find((f) => ['global_auth_rule', 'globalAuthRule'].includes(f.name.value));
  if (!field) return false;
  const dv = field.defaultValue?.fields?.[0];
  if (field.type.name?.value === 'AuthRule' && dv?.name.value === 'allow' && dv?.value.value === 'public') return true;
  throw new Error('There was a problem with your auth configuration (input AMPLIFY globalAuthRule)');
}

// ---- v1: amplify-category-api 5.15.3 lib/graphql-transformer/transform-graphql-schema-v1.js and
// transformer-factory.js (getTransformerFactoryV1), then graphql-transformer-core's buildAPIProject
// without writing the build folder.
async function transformV1() {
  if (featureFlags.getBoolean('enableGen2Migration')) {
    throw new Error('V1 transformer is not supported for Amplify Gen 2 migrations. Migrate to V2 transformer first.');
  }
  const { DynamoDBModelTransformer } = require('graphql-dynamodb-transformer');
  const { VersionedModelTransformer } = require('graphql-versioned-transformer');
  const { FunctionTransformer } = require('graphql-function-transformer');
  const { HttpTransformer } = require('graphql-http-transformer');
  const { KeyTransformer } = require('graphql-key-transformer');
  const { ModelConnectionTransformer } = require('graphql-connection-transformer');
  const { PredictionsTransformer } = require('graphql-predictions-transformer');
  const { SearchableModelTransformer } = require('graphql-elasticsearch-transformer');
  const { ModelAuthTransformer } = require('graphql-auth-transformer');
  const searchable = core1.collectDirectivesByTypeNames(schemaText).directives.includes('searchable');
  const transformersFactory = async (addSearchable, storageConfig) => [
    new DynamoDBModelTransformer(),
    new VersionedModelTransformer(),
    new FunctionTransformer(),
    new HttpTransformer(),
    new KeyTransformer(),
    new ModelConnectionTransformer(),
    new PredictionsTransformer(storageConfig),
    ...(addSearchable ? [new SearchableModelTransformer()] : []),
    new ModelAuthTransformer({ authConfig, addAwsIamAuthInOutputSchema: false }),
  ];
  const built = await core1.buildAPIProject({
    projectDirectory: work,
    transformersFactory,
    transformersFactoryArgs: [searchable, { bucketName: undefined }],
    rootStackFileName: 'cloudformation-template.json',
    currentCloudBackendDirectory: undefined,
    featureFlags,
    dryRun: true,
  });
  return built.schema;
}
