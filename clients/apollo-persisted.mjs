// Apollo Client's persisted-query link (Apollo's APQ) against tablegraph: the hash alone first
// (as a GET, a URL a CDN can cache), the query once when the server does not hold it, and the
// hash alone from then on.
//
//   node clients/apollo-persisted.mjs http://127.0.0.1:8080/graphql <api key>
//
// Prints one line per check and `N passed, N failed`; exits non-zero when any failed.
import { createHash } from 'node:crypto';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { check, expect, finish } from './checks.mjs';

const [url, apiKey] = process.argv.slice(2);
const sent = [];
const client = new ApolloClient({
  link: new PersistedQueryLink({
    sha256: (query) => createHash('sha256').update(query).digest('hex'),
    useGETForHashedQueries: true,
  }).concat(
    new HttpLink({
      uri: url,
      headers: { 'x-api-key': apiKey },
      fetch: (address, init) => {
        sent.push({ method: init.method ?? 'GET', address: String(address), body: init.body });
        return fetch(address, init);
      },
    }),
  ),
  cache: new InMemoryCache(),
});


const FARMS = gql`
  query PersistedFarms($first: Int) {
    listFarms(first: $first) { edges { node { id name } } }
  }
`;
await check('Apollo Client + persisted queries: the query is sent once, then its hash alone over GET', async () => {
  const first = await client.query({ query: FARMS, variables: { first: 2 }, fetchPolicy: 'network-only' });
  expect(Array.isArray(first.data.listFarms.edges), JSON.stringify(first));
  // The hash alone, not held; then the query with its hash.
  expect(sent.length === 2, JSON.stringify(sent));
  expect(sent[0].method === 'GET' && !new URL(sent[0].address).searchParams.has('query'), JSON.stringify(sent[0]));
  expect(sent[1].method === 'POST' && JSON.parse(sent[1].body).query.includes('PersistedFarms'), JSON.stringify(sent[1]));
  const again = await client.query({ query: FARMS, variables: { first: 3 }, fetchPolicy: 'network-only' });
  expect(Array.isArray(again.data.listFarms.edges), JSON.stringify(again));
  expect(sent.length === 3, JSON.stringify(sent));
  const third = new URL(sent[2].address);
  expect(sent[2].method === 'GET' && !third.searchParams.has('query'), sent[2].address);
  expect(third.searchParams.get('extensions').includes('sha256Hash'), sent[2].address);
  // The same URL without the API key runs nothing: a hash needs credentials as a query does.
  const anonymous = await fetch(sent[2].address);
  expect(anonymous.status === 401, `${anonymous.status} ${await anonymous.text()}`);
});

finish();
