// The real aws-amplify v6 client's subscriptions (generateClient().graphql(...).subscribe)
// against tablegraph serving TLS itself: Amplify turns the https:// endpoint into
// wss://HOST/graphql/realtime and speaks AppSync's real-time protocol there, credentials in a
// `header-<base64url>` subprotocol. The self-signed certificate is trusted through
// NODE_EXTRA_CA_CERTS, as an app trusts a private CA.
//
//   NODE_EXTRA_CA_CERTS=cert.pem node clients/amplify-realtime.mjs \
//        https://127.0.0.1:8443/graphql <api key> <jwt> <access key id> <secret access key>
//
// Prints one line per check and `N passed, N failed`; exits non-zero when any failed.
import { Amplify } from 'aws-amplify';
import { Hub } from 'aws-amplify/utils';
import { generateClient } from 'aws-amplify/api';
import { check, expect, finish, recordWebSockets } from './checks.mjs';

const [url, apiKey, token, accessKeyId, secretAccessKey] = process.argv.slice(2);

// What the client sends and receives on its sockets, so that the test sees the protocol.
const sent = [];
const received = [];
recordWebSockets(received, sent);

// IAM callers sign with a long-term access key of the server's --iam-credentials, handed to
// Amplify as an app's own credentials provider would hand it (Amplify's default provider, a
// Cognito identity pool, gives temporary credentials, which only AWS can verify).
const credentialsProvider = {
  getCredentialsAndIdentityId: async () => ({ credentials: { accessKeyId, secretAccessKey } }),
  clearCredentialsAndIdentityId: () => {},
};
Amplify.configure(
  { API: { GraphQL: { endpoint: url, region: 'us-east-1', defaultAuthMode: 'apiKey', apiKey } } },
  { Auth: { credentialsProvider } },
);

/** Resolves when `predicate` holds, checked on each of Amplify's API events; at most 20 s. */
function until(what, predicate) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${what} in 20 s`)), 20_000);
    const look = () => {
      if (predicate()) {
        clearTimeout(timer);
        stop();
        resolve();
      }
    };
    const stop = Hub.listen('api', look);
    const poll = setInterval(() => {
      if (predicate()) {
        clearInterval(poll);
        look();
      }
    }, 50);
    setTimeout(() => clearInterval(poll), 20_000);
    look();
  });
}

const ON_CREATE_FARM = `subscription OnCreateFarm($filter: ModelSubscriptionFarmFilterInput) {
  onCreateFarm(filter: $filter) { name }
}`;
const CREATE_FARM = 'mutation CreateFarm($name: String!) { createFarm(input: { name: $name }) { id } }';

/** Subscribes with a filter, makes farms, and answers the names the subscription received. */
async function filteredEvents(client, names, prefix) {
  const events = [];
  const errors = [];
  const subscription = client
    .graphql({ query: ON_CREATE_FARM, variables: { filter: { name: { beginsWith: prefix } } } })
    .subscribe({
      next: ({ data }) => events.push(data.onCreateFarm.name),
      error: (error) => errors.push(error),
    });
  await until('start_ack', () => received.some((m) => m.type === 'start_ack') || errors.length > 0);
  expect(errors.length === 0, JSON.stringify(errors));
  for (const name of names) {
    const result = await client.graphql({ query: CREATE_FARM, variables: { name } });
    expect(!result.errors, JSON.stringify(result));
  }
  const matching = names.filter((name) => name.startsWith(prefix));
  await until('the events', () => events.length >= matching.length || errors.length > 0);
  expect(errors.length === 0, JSON.stringify(errors));
  expect(JSON.stringify(events) === JSON.stringify(matching), `${events} for ${matching}`);
  return subscription;
}

await check('aws-amplify: a subscription over wss:// with an API key gets exactly the events its filter chooses', async () => {
  const client = generateClient();
  const subscription = await filteredEvents(client, ['Acre', 'Hilltop', 'Bell', 'Hillside'], 'Hi');
  expect(
    sent.some((m) => m.type === 'start' && m.payload.extensions.authorization['x-api-key'] === apiKey),
    JSON.stringify(sent),
  );
  // unsubscribe() sends `stop`, which the server completes.
  const start = sent.find((m) => m.type === 'start');
  subscription.unsubscribe();
  await until('stop and complete', () =>
    sent.some((m) => m.type === 'stop' && m.id === start.id) &&
    received.some((m) => m.type === 'complete' && m.id === start.id),
  );
});

await check('aws-amplify: a subscription with a JWT sent as aws-amplify sends one (Authorization without Bearer, authMode lambda)', async () => {
  received.length = 0;
  sent.length = 0;
  const client = generateClient({ authMode: 'lambda', authToken: token });
  const subscription = await filteredEvents(client, ['Wold', 'Ridge', 'Ridgeway'], 'Ridge');
  const start = sent.find((m) => m.type === 'start');
  expect(start.payload.extensions.authorization.Authorization === token, JSON.stringify(start));
  subscription.unsubscribe();
});

await check('aws-amplify: a subscription signed with SigV4 (authMode iam), its handshake and start verified', async () => {
  received.length = 0;
  sent.length = 0;
  const client = generateClient({ authMode: 'iam' });
  const subscription = await filteredEvents(client, ['Copse', 'Fenland', 'Fenside'], 'Fen');
  const start = sent.find((m) => m.type === 'start');
  const { authorization } = start.payload.extensions;
  expect(
    authorization.authorization.startsWith(`AWS4-HMAC-SHA256 Credential=${accessKeyId}/`) &&
      authorization['x-amz-date'] && !authorization['x-api-key'],
    JSON.stringify(start),
  );
  subscription.unsubscribe();
});

finish();
