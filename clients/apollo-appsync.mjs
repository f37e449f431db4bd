// Apollo Client with AWS's aws-appsync-auth-link and aws-appsync-subscription-link, as AppSync
// apps that do not use Amplify wire them: mutations over HTTP with the API key, subscriptions
// over AppSync's real-time protocol at /graphql/realtime (the link turns https:// into wss://).
//
//   NODE_EXTRA_CA_CERTS=cert.pem node clients/apollo-appsync.mjs https://127.0.0.1:8443/graphql <api key>
//
// Prints one line per check and `N passed, N failed`; exits non-zero when any failed.
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { createAuthLink } from 'aws-appsync-auth-link';
import { createSubscriptionHandshakeLink } from 'aws-appsync-subscription-link';
import { check, expect, finish, recordWebSockets } from './checks.mjs';

const [url, apiKey] = process.argv.slice(2);
// What the server sends on the link's socket, so that the test knows when the subscription
// is acknowledged.
const received = [];
recordWebSockets(received);

const auth = { type: 'API_KEY', apiKey };
const config = { url, region: 'us-east-1', auth };
const client = new ApolloClient({
  link: ApolloLink.from([
    createAuthLink(config),
    createSubscriptionHandshakeLink(config, new HttpLink({ uri: url })),
  ]),
  cache: new InMemoryCache(),
});


await check('Apollo Client + aws-appsync-subscription-link: a subscription gets the events its filter chooses', async () => {
  const events = [];
  const errors = [];
  /** Resolves when `predicate` holds (looked at every 50 ms). */
  const until = (predicate) =>
    new Promise((resolve) => {
      const look = setInterval(() => {
        if (predicate()) {
          clearInterval(look);
          resolve();
        }
      }, 50);
    });
  const subscription = client
    .subscribe({
      query: gql`
        subscription OnCreateFarm($filter: ModelSubscriptionFarmFilterInput) {
          onCreateFarm(filter: $filter) { name }
        }
      `,
      variables: { filter: { name: { beginsWith: 'Ap' } } },
    })
    .subscribe({
      next: (result) => {
        if (result.data?.onCreateFarm) events.push(result.data.onCreateFarm.name);
        else errors.push(result);
      },
      error: (error) => errors.push(error),
    });
  const timeout = (what) =>
    new Promise((_, reject) => setTimeout(() => reject(new Error(`no ${what} in 20 s`)), 20_000).unref());
  const acknowledged = until(() => received.some((m) => m.type === 'start_ack') || errors.length > 0);
  await Promise.race([acknowledged, timeout('start_ack')]);
  expect(errors.length === 0, JSON.stringify(errors));
  const names = ['Apple Yard', 'Meadow', 'Apricot Hill'];
  for (const name of names) {
    const result = await client.mutate({
      mutation: gql`
        mutation CreateFarm($name: String!) { createFarm(input: { name: $name }) { id } }
      `,
      variables: { name },
    });
    expect(result.data?.createFarm?.id, JSON.stringify(result));
  }
  await Promise.race([until(() => events.length >= 2 || errors.length > 0), timeout('events')]);
  expect(errors.length === 0, JSON.stringify(errors));
  expect(JSON.stringify(events) === '["Apple Yard","Apricot Hill"]', JSON.stringify(events));
  subscription.unsubscribe();
});

finish();
