// The real aws-amplify v6 client (generateClient().graphql) against a running tablegraph:
// an API key (x-api-key), and a user-pool token sent as aws-amplify sends one in its
// `lambda`/`oidc` modes, `Authorization: <jwt>` without `Bearer`.
//
//   node clients/amplify.mjs http://127.0.0.1:8080/graphql <api key> <jwt> \
//        [http://127.0.0.1:8081/graphql tests/fixtures/amplify/quick-notes/operations.graphql]
//
// Prints one line per check and `N passed, N failed`; exits non-zero when any failed.
import { Amplify } from 'aws-amplify';
import { generateClient } from 'aws-amplify/api';
import { check, expect, finish } from './checks.mjs';

const [url, apiKey, token] = process.argv.slice(2);
Amplify.configure({
  API: { GraphQL: { endpoint: url, region: 'us-east-1', defaultAuthMode: 'apiKey', apiKey } },
});
const client = generateClient();


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
// A second server, of an Amplify app as its repository commits it (quick-notes), driven by
// the operations its codegen generated: Amplify's API shape.
const [appUrl, appOperations] = process.argv.slice(5);
if (appUrl) {
  const { readFileSync } = await import('node:fs');
  const text = readFileSync(appOperations, 'utf8');
  // Each operation as the generated client sends it: alone.
  const operations = Object.fromEntries(
    text
      .split(/\n(?=(?:query|mutation|subscription) )/)
      .map((chunk) => [chunk.match(/^(?:query|mutation|subscription) (\w+)/)[1], chunk.trim()]),
  );
  Amplify.configure({
    API: { GraphQL: { endpoint: appUrl, region: 'us-east-1', defaultAuthMode: 'lambda' } },
  });
  const app = generateClient({ authMode: 'lambda', authToken: token });
  const run = (name, variables) => app.graphql({ query: operations[name], variables, authToken: token });
  const ids = [];
  await check('aws-amplify + codegen: CreateNote, as the owner the token names', async () => {
    for (const title of ['Lambing', 'Shearing', 'Haymaking']) {
      const result = await run('CreateNote', { input: { title, text: `${title} notes` } });
      ids.push(result.data.createNote.id);
    }
    expect(ids.every((id) => typeof id === 'string'), JSON.stringify(ids));
  });
  await check('aws-amplify + codegen: GetNote', async () => {
    const result = await run('GetNote', { id: ids[0] });
    expect(result.data.getNote.title === 'Lambing', JSON.stringify(result));
  });
  await check('aws-amplify + codegen: ListNotes pages by limit and nextToken', async () => {
    const seen = [];
    let nextToken = null;
    let pages = 0;
    do {
      const result = await run('ListNotes', { limit: 2, nextToken });
      const page = result.data.listNotes;
      expect(page.items.length <= 2, JSON.stringify(result));
      seen.push(...page.items.map((item) => item.id));
      nextToken = page.nextToken;
      pages += 1;
    } while (nextToken && pages < 5);
    expect(pages === 2 && ids.every((id) => seen.includes(id)), `${pages} pages: ${seen}`);
  });
  await check('aws-amplify + codegen: ListNotes with a filter', async () => {
    const result = await run('ListNotes', { filter: { title: { beginsWith: 'Sh' } } });
    const titles = result.data.listNotes.items.map((item) => item.title);
    expect(JSON.stringify(titles) === '["Shearing"]', JSON.stringify(result));
  });
  await check('aws-amplify + codegen: UpdateNote and DeleteNote(input: { id })', async () => {
    const updated = await run('UpdateNote', { input: { id: ids[1], text: 'done' } });
    expect(updated.data.updateNote.text === 'done', JSON.stringify(updated));
    const deleted = await run('DeleteNote', { input: { id: ids[2] } });
    expect(deleted.data.deleteNote.id === ids[2], JSON.stringify(deleted));
    const gone = await run('GetNote', { id: ids[2] });
    expect(gone.data.getNote === null, JSON.stringify(gone));
  });
  await check("aws-amplify: a failed condition is DynamoDB's ConditionalCheckFailedException", async () => {
    try {
      await app.graphql({
        query:
          'mutation($id: ID!) { updateNote(input: { id: $id, text: "x" }, condition: { text: { eq: "not it" } }) { id } }',
        variables: { id: ids[0] },
        authToken: token,
      });
    } catch (error) {
      const types = (error.errors ?? []).map((e) => e.errorType);
      expect(types.includes('DynamoDB:ConditionalCheckFailedException'), JSON.stringify(error));
      return;
    }
    throw new Error('the condition did not fail');
  });
}
finish();
