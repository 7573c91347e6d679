// pg-transactional-outbox driven for real, for tests/test_pgto_npm.py: the library's own code creates its outbox
// table and polling function, stores messages and runs a polling listener against the test database.
// Usage: node driver.cjs <node_modules folder> <setup|store|listen> ; the database in DATABASE_URL.
'use strict';
const path = require('node:path');
const modules = process.argv[2];
const lib = require(path.join(modules, 'pg-transactional-outbox'));
const { Pool } = require(path.join(modules, 'pg'));

const connectionString = process.env.DATABASE_URL;
const settings = {
  dbSchema: 'public',
  dbTable: 'outbox',
  nextMessagesFunctionName: 'next_outbox_messages',
  nextMessagesBatchSize: 5,
  nextMessagesLockInMs: 2000,             // the lease a taken message holds
  nextMessagesPollingIntervalInMs: 100,
  enableMaxAttemptsProtection: false,
  enablePoisonousMessageProtection: false,
};
const config = { outboxOrInbox: 'outbox', dbListenerConfig: { connectionString }, settings };
const setup = { outboxOrInbox: 'outbox', database: 'x', schema: 'public', table: 'outbox', listenerRole: 'x',
                nextMessagesName: 'next_outbox_messages' };

async function run(sql) {
  const pool = new Pool({ connectionString });
  try { await pool.query(sql); } finally { await pool.end(); }
}

async function store() {
  // three messages now, and one stored to run in an hour (its locked_until is its schedule)
  const save = lib.initializeMessageStorage(config, lib.getDisabledLogger());
  const pool = new Pool({ connectionString });
  const client = await pool.connect();
  try {
    const inHour = new Date(Date.now() + 3600_000).toISOString();
    // 'hang' last: the listener's first batches hold one message, and 'hang' keeps its batch for good
    for (const [type, lockedUntil] of [['ok', null], ['throw', null], ['later', inHour], ['hang', null]]) {
      await client.query('BEGIN');
      // each in its own segment: the polling function takes one message at a time per segment
      const message = { id: require('node:crypto').randomUUID(), aggregateType: 'order', messageType: type,
                        aggregateId: type, segment: type, payload: { type }, createdAt: new Date().toISOString() };
      if (lockedUntil) message.lockedUntil = lockedUntil;
      await save(message, client);
      await client.query('COMMIT');
    }
  } finally { client.release(); await pool.end(); }
}

function listen() {
  const handler = {
    handle: async (message) => {
      if (message.messageType === 'hang') return new Promise(() => {});  // the process is killed mid-message
      if (message.messageType === 'throw') throw new Error('handler failed');
    },
  };
  lib.initializePollingMessageListener(config, handler, lib.getDisabledLogger(),
                                       { messageProcessingTimeoutStrategy: () => 600_000 });
}

const mode = process.argv[3];
if (mode === 'setup') {
  run([lib.DatabaseSetup.dropAndCreateTable(setup), lib.DatabaseSetup.createPollingFunction(setup),
       lib.DatabaseSetup.setupPollingIndexes(setup)].join('\n')).catch((e) => { console.error(e); process.exit(1); });
} else if (mode === 'store') {
  store().catch((e) => { console.error(e); process.exit(1); });
} else {
  listen();
}
