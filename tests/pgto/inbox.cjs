// pg-transactional-outbox's inbox driven for real, for tests/test_journey_services.py: the library's own code creates
// its inbox table and polling function, stores the messages a relay delivered (their ids are the producer's outbox
// ids) and runs a polling listener that handles them (the library sets processed_at).
// Usage: node inbox.cjs <node_modules folder> <setup|receive|listen> ; the database in DATABASE_URL;
// receive reads the messages as JSON lines on stdin: {"id", "messageType", "createdAt"}.
'use strict';
const path = require('node:path');
const modules = process.argv[2];
const lib = require(path.join(modules, 'pg-transactional-outbox'));
const { Pool } = require(path.join(modules, 'pg'));

const connectionString = process.env.DATABASE_URL;
const settings = {
  dbSchema: 'public',
  dbTable: 'inbox',
  nextMessagesFunctionName: 'next_inbox_messages',
  nextMessagesBatchSize: 20,
  nextMessagesLockInMs: 5000,
  nextMessagesPollingIntervalInMs: 100,
  enableMaxAttemptsProtection: false,
  enablePoisonousMessageProtection: false,
};
const config = { outboxOrInbox: 'inbox', dbListenerConfig: { connectionString }, settings };
const setup = { outboxOrInbox: 'inbox', database: 'x', schema: 'public', table: 'inbox', listenerRole: 'x',
                nextMessagesName: 'next_inbox_messages' };

async function run(sql) {
  const pool = new Pool({ connectionString });
  try { await pool.query(sql); } finally { await pool.end(); }
}

async function receive() {
  const lines = require('node:fs').readFileSync(0, 'utf8').split('\n').filter((l) => l.trim());
  const save = lib.initializeMessageStorage(config, lib.getDisabledLogger());
  const pool = new Pool({ connectionString });
  const client = await pool.connect();
  try {
    for (const line of lines) {
      const m = JSON.parse(line);
      await client.query('BEGIN');
      await save({ id: m.id, aggregateType: 'order', aggregateId: m.id, messageType: m.messageType, segment: m.id,
                   payload: { id: m.id }, createdAt: m.createdAt }, client);
      await client.query('COMMIT');
    }
  } finally { client.release(); await pool.end(); }
}

function listen() {
  lib.initializePollingMessageListener(config, { handle: async () => {} }, lib.getDisabledLogger());
}

const mode = process.argv[3];
if (mode === 'setup') {
  run([lib.DatabaseSetup.dropAndCreateTable(setup), lib.DatabaseSetup.createPollingFunction(setup),
       lib.DatabaseSetup.setupPollingIndexes(setup)].join('\n')).catch((e) => { console.error(e); process.exit(1); });
} else if (mode === 'receive') {
  receive().catch((e) => { console.error(e); process.exit(1); });
} else {
  listen();
}
