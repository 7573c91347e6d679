-- profile_index_spring_modulith_outbox_incomplete_v2 --
-- Spring Modulith v2: the incomplete publications (the registry's own definition) by publication date.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {table} ({publication_date})
WHERE ({completion_date} IS NULL OR {status} <> 'COMPLETED')

-- profile_index_spring_modulith_outbox_incomplete_v1 --
-- Spring Modulith v1: the incomplete publications (no completion date) by publication date.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {table} ({publication_date}) WHERE {completion_date} IS NULL

-- profile_index_masstransit_inbox_undelivered --
-- MassTransit: inbox states never delivered, by when they were received.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {table} ({Received}) WHERE {Delivered} IS NULL

-- profile_index_masstransit_outbox_state_undelivered --
-- MassTransit: outbox states never delivered, by when they were created.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {table} ({Created}) WHERE {Delivered} IS NULL

-- profile_index_cap_outbox_unfinished --
-- DotNetCore.CAP: published messages not Succeeded (pending, queued, stuck, failed: the backlog), by when they were added; CAP's own indexes lead with ExpiresAt, which a Scheduled row has none of.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {table} ({Added}) WHERE {StatusName} <> 'Succeeded'

-- profile_index_cap_inbox_unfinished --
-- DotNetCore.CAP: received messages not Succeeded (pending, stuck, failed: the backlog), by when they were added.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {table} ({Added}) WHERE {StatusName} <> 'Succeeded'

-- profile_index_dbos_keys_executor --
-- DBOS Transact: workflows by executor and last update (DBOS 3.4 dropped its executor_id index): a stuck workflow's page says since when its executor has been silent without reading every workflow.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {table} ({executor_id}, {updated_at})

-- profile_index_masstransit_outbox_message_id --
-- MassTransit: outbox messages by MessageId, the journey's one lookup of a message not yet sent.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {table} ({MessageId})

-- profile_index_eventuate_inbox_message_id --
-- Eventuate: received messages by message_id in every consumer, the journey's one lookup of a message.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {table} ({message_id})

-- profile_index_cap_outbox_message_id --
-- CAP: published messages by the cap-msg-id header their Content carries, the journey's one lookup of a message.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {table} ((substring({Content} from '"cap-msg-id"\s*:\s*"([^"]*)"')))

-- profile_index_cap_inbox_message_id --
-- CAP: received messages by the cap-msg-id header their Content carries, the journey's one lookup of a message.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {table} ((substring({Content} from '"cap-msg-id"\s*:\s*"([^"]*)"')))
