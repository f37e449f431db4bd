// The page browser/datastore.mjs opens in each browser context: aws-amplify v6's DataStore with
// the models Amplify's generator made of tests/fixtures/amplify-datastore-app/schema.graphql,
// bundled by esbuild. It keeps what DataStore tells it (observe messages, Hub events, conflicts
// handed to the conflict handler, errors) on `window.app` for the driver to read, and gives the
// driver the calls an app makes: save, query, update, delete.
import { Amplify } from 'aws-amplify';
import { DataStore, DISCARD } from 'aws-amplify/datastore';
import { Hub } from 'aws-amplify/utils';
import { Note, Order } from '../tests/fixtures/amplify-datastore-app/models/index.js';

const models = { Note, Order };

const app = {
  observed: [],
  hub: [],
  conflicts: [],
  errors: [],
  ready: false,
  outboxEmpty: true,
  online: true,

  async start(endpoint, apiKey) {
    Amplify.configure({
      API: { GraphQL: { endpoint, region: 'us-east-1', defaultAuthMode: 'apiKey', apiKey } },
    });
    DataStore.configure({
      // An app that lets the server's copy win when its own write is refused.
      conflictHandler: async ({ modelConstructor, localModel, remoteModel, operation }) => {
        app.conflicts.push({
          model: modelConstructor.name,
          operation,
          local: plain(localModel),
          remote: plain(remoteModel),
        });
        return DISCARD;
      },
      errorHandler: (error) => app.errors.push(`${error.errorType}: ${error.message}`),
    });
    Hub.listen('datastore', ({ payload }) => {
      app.hub.push(payload.event);
      if (payload.event === 'ready') app.ready = true;
      if (payload.event === 'outboxStatus') app.outboxEmpty = payload.data.isEmpty;
      if (payload.event === 'networkStatus') app.online = payload.data.active;
    });
    DataStore.observe().subscribe((message) =>
      app.observed.push({
        model: message.model.name,
        opType: message.opType,
        element: plain(message.element),
      }),
    );
    await DataStore.start();
  },

  async save(model, fields) {
    return plain(await DataStore.save(new models[model](fields)));
  },

  async update(model, id, fields) {
    const stored = await DataStore.query(models[model], id);
    const updated = models[model].copyOf(stored, (draft) => Object.assign(draft, fields));
    return plain(await DataStore.save(updated));
  },

  async remove(model, id) {
    return plain(await DataStore.delete(models[model], id));
  },

  async get(model, id) {
    return plain((await DataStore.query(models[model], id)) ?? null);
  },

  async list(model) {
    return (await DataStore.query(models[model])).map(plain);
  },
};

function plain(model) {
  return model == null ? model : JSON.parse(JSON.stringify(model));
}

window.app = app;
