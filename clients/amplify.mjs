// The real aws-amplify v6 client (generateClient().graphql) against a running tablegraph:
// an API key (x-api-key), and a user-pool token sent as aws-amplify sends one in its
// `lambda`/`oidc` modes, `Authorization: <jwt>` without `Bearer`.
//
//   node clients/amplify.mjs http://127.0.0.1:8080/graphql <api key> <jwt>
//
// Prints one line per check and `N passed, N failed`; exits non-zero when any failed.
import { Amplify } from 'aws-amplify';
import { generateClient } from 'aws-amplify/api';

const [url, apiKey, token] = process.argv.slice(2);
Amplify.configure({
  API: { GraphQL: { endpoint: url, region: 'us-east-1', defaultAuthMode: 'apiKey', apiKey } },
});
const client = generateClient();

let passed = 0;
let failed = 0;
async function check(name, body) {
  try {
    await body();
    passed += 1;
    console.log(`ok      ${name}`);
  } catch (error) {
    failed += 1;
    console.log(`FAILED  ${name}: ${error?.stack ?? JSON.stringify(error)}`);
  }
}
function expect(condition, what) {
  if (!condition) throw new Error(what);
}

let farmId;
await check('aws-amplify: a mutation with the API key', async () => {
  const result = await client.graphql({
    query: 'mutation($name: String!) { createFarm(input: { name: $name }) { id name } }',
    variables: { name: `Amplify farm ${Date.now()}` },
  });
  farmId = result.data.createFarm.id;
  expect(typeof farmId === 'string', `an id: ${JSON.stringify(result)}`);
});
await check('aws-amplify: a query with the API key', async () => {
  const result = await client.graphql({
    query: 'query($id: ID!) { farm(id: $id) { id name } }',
    variables: { id: farmId },
  });
  expect(result.data.farm.id === farmId, JSON.stringify(result));
});
await check('aws-amplify: a token sent without Bearer (authMode lambda) is verified', async () => {
  const result = await client.graphql({
    query: 'query($id: ID!) { farm(id: $id) { name } }',
    variables: { id: farmId },
    authMode: 'lambda',
    authToken: token,
  });
  expect(result.data.farm.name.startsWith('Amplify farm'), JSON.stringify(result));
});
await check("aws-amplify: a wrong API key is AppSync's UnauthorizedException", async () => {
  try {
    await client.graphql({ query: '{ __typename }', authMode: 'apiKey', apiKey: 'da2-wrong' });
  } catch (error) {
    // aws-amplify names the error by the answer's x-amzn-errortype, as AppSync sends it.
    const names = (error.errors ?? []).map((e) => e.originalError?.name);
    expect(names.includes('UnauthorizedException'), `${JSON.stringify(error)} ${names}`);
    return;
  }
  throw new Error('a wrong API key was accepted');
});
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
